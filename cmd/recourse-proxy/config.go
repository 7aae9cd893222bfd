package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/recourse-dev/recourse/proxy"
)

// maxConfigBytes bounds a -config file: a team's routes fit in far less,
// and a file that is not a configuration is refused before it is parsed.
const maxConfigBytes = 1 << 20

// processFlags are the settings of the whole process: a -config file sets
// them at its top level only, and a reload (SIGHUP) does not change them
// (it says so in the log).
var processFlags = map[string]bool{
	"listen": true, "allow-remote": true, "client-keys": true, "grace": true,
	"log-format": true, "log-level": true, "otlp-endpoint": true, "metrics": true,
	"redis": true, "config": true, "version": true,
}

// The keys of a route in a -config file that are not flags.
const (
	keyRoutes          = "routes"
	keyDefaultRoute    = "default-route"
	keyName            = "name"
	keyPrefix          = "prefix"
	keyUpstreamKeyEnv  = "upstream-key-env"
	keyFallbackKeyEnvs = "fallback-key-env"
)

// fileConfig is a -config file as read: the flags its top level sets, its
// routes, and its default route.
type fileConfig struct {
	path         string
	top          []fileKey
	routes       []fileRoute
	defaultRoute string
}

// fileKey is one flag a -config file sets: its name, its value as the
// flag would take it on the command line, and its line.
type fileKey struct {
	name, value string
	line        int
}

// fileRoute is one entry of a -config file's routes.
type fileRoute struct {
	index           int
	line            int
	name, prefix    string
	upstreamKeyEnv  string   // the variable holding the route's upstream key
	fallbackKeyEnvs []string // the variables holding the fallback targets' keys, in order
	keys            []fileKey
}

// envVarName is the syntax of an environment variable a file names.
var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// configError is an error of a -config file: the file, the line, the
// field (a key, routes[i].key), and what is wrong. It never quotes a
// value a key file or variable holds.
type configError struct {
	path  string
	line  int
	field string
	msg   string
}

func (e *configError) Error() string {
	if e.field == "" {
		return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.path, e.line, e.field, e.msg)
}

// readConfigFile reads and checks the structure of a -config file: YAML,
// a mapping whose keys are flag names (without the dash), plus routes (a
// list of mappings, each with a name, an optional prefix, an optional
// upstream-key-env and fallback-key-env, and any flag that is not one of
// the process's) and default-route. fs names the flags. Values are
// scalars, or lists of scalars for a comma-separated flag. A key given
// twice, an unknown key and a process flag inside a route are errors that
// name the file, line and field.
func readConfigFile(path string, fs *flag.FlagSet) (*fileConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-config: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("-config: %v", err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("-config: %s is larger than %d bytes; it is not a configuration", path, maxConfigBytes)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &configError{path: path, line: 1, msg: "the file is empty; want a mapping of settings (see docs/proxy-team.md)"}
		}
		line, msg := yamlError(err)
		return nil, &configError{path: path, line: line, msg: "not YAML the proxy can read: " + msg}
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil:
		return nil, &configError{path: path, line: more.Line, msg: "a second YAML document; want one"}
	case !errors.Is(err, io.EOF):
		// What follows the first document does not parse either.
		line, msg := yamlError(err)
		return nil, &configError{path: path, line: line, msg: "not YAML the proxy can read: " + msg}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &configError{path: path, line: root.Line, msg: "want a mapping of settings (key: value) at the top"}
	}
	fc := &fileConfig{path: path}
	err = eachKey(path, "", root, func(k, v *yaml.Node) error {
		switch k.Value {
		case keyRoutes:
			return fc.readRoutes(v, fs)
		case keyDefaultRoute:
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return &configError{path: path, line: v.Line, field: k.Value, msg: "want a route's name"}
			}
			fc.defaultRoute = v.Value
			return nil
		case keyName, keyPrefix, keyUpstreamKeyEnv, keyFallbackKeyEnvs:
			return &configError{path: path, line: k.Line, field: k.Value, msg: "is a key of a route; set it in an entry of routes"}
		}
		fk, err := flagKey(path, "", k, v, fs)
		if err != nil {
			return err
		}
		fc.top = append(fc.top, fk)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if fc.defaultRoute != "" && !slices.ContainsFunc(fc.routes, func(r fileRoute) bool { return r.name == fc.defaultRoute }) {
		return nil, &configError{path: path, line: lineOf(root, keyDefaultRoute), field: keyDefaultRoute, msg: fmt.Sprintf("%q names no route", fc.defaultRoute)}
	}
	return fc, nil
}

// readRoutes reads the routes list.
func (fc *fileConfig) readRoutes(v *yaml.Node, fs *flag.FlagSet) error {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		return &configError{path: fc.path, line: v.Line, field: keyRoutes, msg: "want a list of routes, each a mapping with a name"}
	}
	for i, item := range v.Content {
		field := fmt.Sprintf("%s[%d]", keyRoutes, i)
		if item.Kind != yaml.MappingNode {
			return &configError{path: fc.path, line: item.Line, field: field, msg: "want a mapping (name: …, provider: …, upstream: …)"}
		}
		r := fileRoute{index: i, line: item.Line}
		err := eachKey(fc.path, field+".", item, func(k, v *yaml.Node) error {
			f := field + "." + k.Value
			switch k.Value {
			case keyName, keyPrefix, keyUpstreamKeyEnv:
				if v.Kind != yaml.ScalarNode {
					return &configError{path: fc.path, line: v.Line, field: f, msg: "want a single value"}
				}
				switch k.Value {
				case keyName:
					r.name = v.Value
				case keyPrefix:
					r.prefix = v.Value
				default:
					if !envVarName.MatchString(v.Value) {
						return &configError{path: fc.path, line: v.Line, field: f, msg: "want the name of an environment variable that holds the key (the key itself never goes in the file)"}
					}
					r.upstreamKeyEnv = v.Value
				}
				return nil
			case keyFallbackKeyEnvs:
				vals, err := listValue(fc.path, f, v)
				if err != nil {
					return err
				}
				for _, name := range vals {
					if name != "" && !envVarName.MatchString(name) {
						return &configError{path: fc.path, line: v.Line, field: f, msg: "want names of environment variables, one per fallback target, in order (empty for a target without a key)"}
					}
				}
				r.fallbackKeyEnvs = vals
				return nil
			case keyRoutes, keyDefaultRoute:
				return &configError{path: fc.path, line: k.Line, field: f, msg: "is a top-level key"}
			}
			if processFlags[k.Value] {
				return &configError{path: fc.path, line: k.Line, field: f, msg: "is a setting of the whole process; set it at the top level"}
			}
			fk, err := flagKey(fc.path, field+".", k, v, fs)
			if err != nil {
				return err
			}
			r.keys = append(r.keys, fk)
			return nil
		})
		if err != nil {
			return err
		}
		if r.name == "" {
			return &configError{path: fc.path, line: item.Line, field: field, msg: "has no name; every route needs one (lower-case letters, digits, - and _)"}
		}
		for _, o := range fc.routes {
			if o.name == r.name {
				return &configError{path: fc.path, line: lineOf(item, keyName), field: field + ".name", msg: fmt.Sprintf("%q names the route at line %d too", r.name, o.line)}
			}
		}
		fc.routes = append(fc.routes, r)
	}
	return nil
}

// eachKey calls f for each key of the mapping m and its value, refusing a
// key given twice and a key that is not a plain string.
func eachKey(path, field string, m *yaml.Node, f func(k, v *yaml.Node) error) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return &configError{path: path, line: k.Line, field: strings.TrimSuffix(field, "."), msg: "a key that is not a name"}
		}
		if l, ok := seen[k.Value]; ok {
			return &configError{path: path, line: k.Line, field: field + k.Value, msg: fmt.Sprintf("is given twice (first at line %d)", l)}
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.AliasNode {
			return &configError{path: path, line: v.Line, field: field + k.Value, msg: "is an alias; write the value out"}
		}
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

// flagKey returns the fileKey of a key naming a flag of fs, its value a
// scalar, or a list of scalars joined by commas.
func flagKey(path, field string, k, v *yaml.Node, fs *flag.FlagSet) (fileKey, error) {
	f := fs.Lookup(k.Value)
	if f == nil || k.Value == "config" || k.Value == "version" {
		return fileKey{}, &configError{path: path, line: k.Line, field: field + k.Value,
			msg: "is not a setting; the keys are the flags' names without the dash (see recourse-proxy -h), plus routes and default-route at the top and name, prefix, upstream-key-env and fallback-key-env in a route"}
	}
	vals, err := listValue(path, field+k.Value, v)
	if err != nil {
		return fileKey{}, err
	}
	return fileKey{name: k.Value, value: strings.Join(vals, ","), line: v.Line}, nil
}

// listValue returns a scalar as one value, a list of scalars as its values.
func listValue(path, field string, v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return []string{""}, nil
		}
		return []string{v.Value}, nil
	case yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, &configError{path: path, line: c.Line, field: field, msg: "want a value or a list of values"}
			}
			out = append(out, c.Value)
		}
		return out, nil
	}
	return nil, &configError{path: path, line: v.Line, field: field, msg: "want a value or a list of values"}
}

// lineOf returns the line of key in mapping m, or m's line.
func lineOf(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return m.Line
}

// yamlError returns the line the parser's error names (1 when it names
// none) and its message without the "yaml: line N: " prefix.
func yamlError(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if v, err := strconv.Atoi(n); err == nil {
				line, msg = v, after
			}
		}
	}
	return line, msg
}

// apply sets keys on fs, as if each were given on the command line, and
// marks them set in set. where prefixes an error's field.
func (fc *fileConfig) apply(fs *flag.FlagSet, set map[string]bool, where string, keys []fileKey) error {
	for _, k := range keys {
		if err := fs.Set(k.name, k.value); err != nil {
			v := k.value
			if len(v) > 64 {
				v = v[:64] + "…"
			}
			return &configError{path: fc.path, line: k.line, field: where + k.name, msg: fmt.Sprintf("is %q; want %s", v, formOf(fs.Lookup(k.name)))}
		}
		set[k.name] = true
	}
	return nil
}

// explain turns an error of a route's settings (settings.config), which
// names a flag as -name, into an error naming the file, the line of that
// key (in the route, or else at the top) and the field.
func (fc *fileConfig) explain(r *fileRoute, err error) error {
	msg := err.Error()
	field, line := "", 1
	if r != nil {
		field, line = fmt.Sprintf("%s[%d]", keyRoutes, r.index), r.line
		if r.name != "" {
			field += " (" + r.name + ")"
		}
	}
	best := 0
	find := func(keys []fileKey, prefix string) {
		for _, k := range keys {
			if i := strings.Index(msg, "-"+k.name); i >= 0 && len(k.name) > best {
				best, line = len(k.name), k.line
				if prefix != "" {
					field = prefix + "." + k.name
				} else {
					field = k.name
				}
			}
		}
	}
	find(fc.top, "")
	if r != nil {
		find(r.keys, fmt.Sprintf("%s[%d]", keyRoutes, r.index))
	}
	var ce *proxy.ConfigError
	if errors.As(err, &ce) {
		// The proxy's error names a Config field (Upstream), or a Router's
		// Routes[i].<field>: say it as the file's key, at its line.
		msg = ce.Problem
		name := ce.Field
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		key := strings.ToLower(name)
		switch name {
		case "MaxBodyBytes":
			key = "max-body"
		case "ClientKeys":
			key = "client-keys"
		case "UpstreamKey":
			key = "upstream-key-file"
		}
		field = key
		if r != nil {
			field = fmt.Sprintf("%s[%d].%s", keyRoutes, r.index, key)
			if key == "prefix" || key == "name" {
				line = r.line
			}
		}
		for _, k := range fc.top {
			if k.name == key {
				line = k.line
			}
		}
		if r != nil {
			for _, k := range r.keys {
				if k.name == key {
					line = k.line
				}
			}
		}
	}
	return &configError{path: fc.path, line: line, field: field, msg: msg}
}

// formOf says what form a flag's value takes, for an error (R21.10).
func formOf(f *flag.Flag) string {
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool:
			return "true or false"
		case time.Duration:
			return "a duration such as 500ms, 30s or 1m30s"
		case int64:
			return "a whole number of bytes, for example 33554432"
		case int, uint, uint64:
			return "an integer, for example " + f.DefValue
		case float64:
			return "a number, for example " + f.DefValue
		}
	}
	return "a valid value"
}
