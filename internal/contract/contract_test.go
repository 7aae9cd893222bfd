package contract_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the module whose root holds CONTRACT.md.
const modulePath = "github.com/recourse-dev/recourse"

// contractRules is every numbered rule of the recovery contract, in order.
// CONTRACT.md must define exactly these, each once, under its own section
// heading. R4's classification steps are R4.1 … R4.7, followed by R4.8;
// R4.9, added later, says where among them it is checked.
var contractRules = []string{
	"R1.1", "R1.2", "R1.3",
	"R2.1", "R2.2", "R2.3", "R2.4", "R2.5", "R2.6", "R2.7", "R2.8",
	"R3.1", "R3.2", "R3.3", "R3.4", "R3.5", "R3.6",
	"R4.1", "R4.2", "R4.3", "R4.4", "R4.5", "R4.6", "R4.7", "R4.8", "R4.9",
	"R5.1", "R5.2", "R5.3", "R5.4", "R5.5",
	"R6.1", "R6.2",
	"R7.1", "R7.2", "R7.3", "R7.4",
	"R8.1", "R8.2", "R8.3", "R8.4",
	"R9.1", "R9.2", "R9.3",
	"R10.1", "R10.2", "R10.3", "R10.4", "R10.5", "R10.6", "R10.7", "R10.8",
	"R11.1", "R11.2", "R11.3", "R11.4",
	"R12.1", "R12.2", "R12.3", "R12.4",
	"R13.1", "R13.2", "R13.3", "R13.4", "R13.5", "R13.6", "R13.7", "R13.8", "R13.9", "R13.10",
	"R14.1", "R14.2",
	"R15.1", "R15.2",
	"R16.1", "R16.2", "R16.3",
	"R17.1", "R17.2", "R17.3",
	"R18.1", "R18.2", "R18.3", "R18.4", "R18.5",
	"R19.1", "R19.2", "R19.3", "R19.4", "R19.5", "R19.6", "R19.7", "R19.8", "R19.9", "R19.10", "R19.11", "R19.12", "R19.13", "R19.14", "R19.15",
	"R20.1", "R20.2", "R20.3", "R20.4", "R20.5", "R20.6", "R20.7", "R20.8", "R20.9", "R20.10", "R20.11", "R20.12", "R20.13", "R20.14", "R20.15", "R20.16",
	"R21.1", "R21.2",
	"R21.3", "R21.4", "R21.5", "R21.6", "R21.7", "R21.8", "R21.9", "R21.10", "R21.11", "R21.12", "R21.13", "R21.14", "R21.15", "R21.16",
	"R22.1", "R22.2", "R22.3", "R22.4", "R22.5", "R22.6", "R22.7", "R22.8", "R22.9", "R22.10",
	"R23.1", "R23.2", "R23.3", "R23.4", "R23.5", "R23.6", "R23.7", "R23.8", "R23.9",
}

// rule is a rule number: a section (R4, Item 0) or a rule (R4.6).
type rule struct{ Section, Item int }

func (r rule) String() string {
	if r.Item == 0 {
		return "R" + strconv.Itoa(r.Section)
	}
	return "R" + strconv.Itoa(r.Section) + "." + strconv.Itoa(r.Item)
}

// less orders rules numerically: R2 < R2.1 < R2.10 < R10.
func (r rule) less(o rule) bool {
	if r.Section != o.Section {
		return r.Section < o.Section
	}
	return r.Item < o.Item
}

func mustRule(s string) rule {
	sec, item, ok := strings.Cut(strings.TrimPrefix(s, "R"), ".")
	r := rule{Section: atoi(sec)}
	if ok {
		r.Item = atoi(item)
	}
	return r
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic("contract: not a number: " + s)
	}
	return n
}

// ---------------------------------------------------------------------------
// The repository.

// repoRoot walks up from the working directory (the package directory under
// go test) to the directory whose go.mod declares modulePath.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && moduleOf(b) == modulePath {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// moduleOf returns the module path a go.mod declares.
func moduleOf(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// CONTRACT.md.

var (
	// headingRE is a section heading: "## R4. Eligibility".
	headingRE = regexp.MustCompile(`^## R([0-9]+)\. \S`)
	// itemRE is a rule definition: `- <a id="r4.6"></a>**R4.6** text`.
	itemRE = regexp.MustCompile(`^- <a id="([^"]*)"></a>\*\*R([0-9]+)\.([0-9]+)\*\* \S`)
	// lookalikeRE is any line that tries to define a rule or a section;
	// one that matches neither form above is reported as malformed.
	lookalikeRE = regexp.MustCompile(`^\s*(#+\s*R[0-9]|[-*+]\s.*\*\*R[0-9]+(\.[0-9]+)?\*\*)`)
)

// contract is what CONTRACT.md defines.
type contract struct {
	sections map[int]bool
	rules    []rule // in document order
	problems []string
}

func (c *contract) defines(r rule) bool {
	if r.Item == 0 {
		return c.sections[r.Section]
	}
	return slices.Contains(c.rules, r)
}

// parseContract reads the sections and rules that text defines. It
// reports, as problems, malformed definition lines, rules outside their
// section, anchors that do not name their rule, and duplicates.
func parseContract(text string) *contract {
	c := &contract{sections: map[int]bool{}}
	section := 0
	seen := map[rule]int{}
	inFence := false
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			section = atoi(m[1])
			if c.sections[section] {
				c.problems = append(c.problems, fmt.Sprintf("line %d: section R%d is defined twice", n, section))
			}
			c.sections[section] = true
			continue
		}
		if strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "# ") {
			section = 0 // a heading that is not a rule section
		}
		if m := itemRE.FindStringSubmatch(line); m != nil {
			r := rule{Section: atoi(m[2]), Item: atoi(m[3])}
			if want := strings.ToLower(r.String()); m[1] != want {
				c.problems = append(c.problems, fmt.Sprintf("line %d: %s has anchor id %q, want %q", n, r, m[1], want))
			}
			if r.Section != section {
				c.problems = append(c.problems, fmt.Sprintf("line %d: %s is not under its heading \"## R%d. …\"", n, r, r.Section))
			}
			if first, dup := seen[r]; dup {
				c.problems = append(c.problems, fmt.Sprintf("line %d: %s is defined again (first on line %d)", n, r, first))
				continue
			}
			seen[r] = n
			c.rules = append(c.rules, r)
			continue
		}
		if lookalikeRE.MatchString(line) {
			c.problems = append(c.problems, fmt.Sprintf("line %d: malformed rule definition %q: want \"## R<n>. Title\" or \"- <a id=\\\"r<n>.<m>\\\"></a>**R<n>.<m>** text\"", n, line))
		}
	}
	return c
}

func readContract(t *testing.T) *contract {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "CONTRACT.md"))
	if err != nil {
		t.Fatal(err)
	}
	return parseContract(string(b))
}

// ---------------------------------------------------------------------------
// Citations in Go files.

var (
	// citeRE is a rule cited in prose: "R13.5", or a whole section, "R4".
	// It accepts any number, so that a citation of a rule that does not
	// exist (R18, R4.9) is found and reported rather than missed.
	citeRE = regexp.MustCompile(`\bR([0-9]+)(?:\.([0-9]+))?\b`)
	// testNameRE is the name of a test, fuzz target, benchmark or example,
	// wherever it appears (declared, or named in a comment).
	testNameRE = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]*`)
)

// namePrefixes are the prefixes of the function names go test runs.
var namePrefixes = []string{"Test", "Fuzz", "Benchmark", "Example"}

// testNameCitations returns the rules a test name cites. Underscores stand
// for dots: TestR13_5_X cites R13.5, TestProviders_R4_2_X cites R4.2,
// TestR17_1Notices cites R17.1, TestR5_RetryAfter and TestR8Admission cite
// the sections R5 and R8. A citation starts right after the prefix or after
// an underscore, and ends at an underscore, an upper-case letter or the end
// of the name. A rule's own number has one or two digits, so a longer
// number after the section is something else: TestX_R5_429RetryAfter cites
// R5 (429 is a status).
func testNameCitations(name string) []rule {
	start := -1
	for _, p := range namePrefixes {
		if strings.HasPrefix(name, p) {
			start = len(p)
			break
		}
	}
	if start < 0 {
		return nil
	}
	digits := func(i int) int {
		j := i
		for j < len(name) && name[j] >= '0' && name[j] <= '9' {
			j++
		}
		return j
	}
	ends := func(i int) bool { return i == len(name) || name[i] == '_' || (name[i] >= 'A' && name[i] <= 'Z') }
	var out []rule
	for i := start; i < len(name); i++ {
		if name[i] != 'R' || (i != start && name[i-1] != '_') {
			continue
		}
		j := digits(i + 1)
		if j == i+1 {
			continue
		}
		r := rule{Section: atoi(name[i+1 : j])}
		if j < len(name) && name[j] == '_' {
			if k := digits(j + 1); k > j+1 && k <= j+3 && ends(k) {
				r.Item = atoi(name[j+1 : k])
				out = append(out, r)
				i = k - 1
				continue
			}
		}
		if ends(j) {
			out = append(out, r)
			i = j - 1
		}
	}
	return out
}

// textCitation is a rule cited at a byte offset of a text.
type textCitation struct {
	rule   rule
	offset int
}

// textCitations returns the rules cited in a comment or string literal:
// dotted numbers and sections, and test names.
func textCitations(s string) []textCitation {
	var out []textCitation
	for _, m := range citeRE.FindAllStringSubmatchIndex(s, -1) {
		r := rule{Section: atoi(s[m[2]:m[3]])}
		if m[4] >= 0 {
			r.Item = atoi(s[m[4]:m[5]])
		}
		out = append(out, textCitation{r, m[0]})
	}
	for _, m := range testNameRE.FindAllStringIndex(s, -1) {
		for _, r := range testNameCitations(s[m[0]:m[1]]) {
			out = append(out, textCitation{r, m[0]})
		}
	}
	return out
}

// citation is a rule cited at a place in the repository.
type citation struct {
	rule rule
	at   string // path:line, the path relative to the repository root
}

// goCitations returns every rule cited in src: in comments, in string
// literals (assertion messages) and in the names of tests.
func goCitations(rel string, src []byte) []citation {
	fset := token.NewFileSet()
	file := fset.AddFile(rel, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments)
	var out []citation
	add := func(pos token.Pos, lit string, cs []textCitation) {
		line := fset.Position(pos).Line
		for _, c := range cs {
			out = append(out, citation{c.rule, rel + ":" + strconv.Itoa(line+strings.Count(lit[:c.offset], "\n"))})
		}
	}
	for {
		pos, tok, lit := s.Scan()
		switch tok {
		case token.EOF:
			return out
		case token.COMMENT, token.STRING:
			add(pos, lit, textCitations(lit))
		case token.IDENT:
			var cs []textCitation
			for _, r := range testNameCitations(lit) {
				cs = append(cs, textCitation{r, 0})
			}
			add(pos, lit, cs)
		}
	}
}

// repoCitations returns the citations in every .go file of the repository
// (every module in it), skipping .git, node_modules and this package.
func repoCitations(t *testing.T, root string) (cites []citation, files int) {
	t.Helper()
	self, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || path == self {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || !d.Type().IsRegular() {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files++
		cites = append(cites, goCitations(filepath.ToSlash(rel), src)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cites, files
}

// ---------------------------------------------------------------------------
// The tests.

// TestContractDefinesEveryRuleOnce: CONTRACT.md defines exactly the rules
// of the contract — none missing, none invented — each once, in order,
// under its own section heading, with an anchor named after it.
func TestContractDefinesEveryRuleOnce(t *testing.T) {
	c := readContract(t)
	for _, p := range c.problems {
		t.Errorf("CONTRACT.md %s", p)
	}
	want := make([]rule, len(contractRules))
	wantSections := map[int]bool{}
	for i, s := range contractRules {
		want[i] = mustRule(s)
		wantSections[want[i].Section] = true
	}
	for _, r := range want {
		if !slices.Contains(c.rules, r) {
			t.Errorf("CONTRACT.md does not define %s", r)
		}
	}
	for _, r := range c.rules {
		if !slices.Contains(want, r) {
			t.Errorf("CONTRACT.md defines %s, which is not a rule of the contract", r)
		}
	}
	for s := range c.sections {
		if !wantSections[s] {
			t.Errorf("CONTRACT.md has a section R%d, which is not a section of the contract", s)
		}
	}
	for s := range wantSections {
		if !c.sections[s] {
			t.Errorf("CONTRACT.md has no heading \"## R%d. …\"", s)
		}
	}
	if !t.Failed() && !slices.Equal(c.rules, want) {
		t.Errorf("CONTRACT.md defines the rules out of order:\n got %v\nwant %v", c.rules, want)
	}
}

// TestCodeCitesOnlyDefinedRules: every rule number cited in a comment, a
// string literal or a test name of any .go file of the repository is
// defined in CONTRACT.md (a section citation such as R4 by its heading).
func TestCodeCitesOnlyDefinedRules(t *testing.T) {
	root := repoRoot(t)
	c := readContract(t)
	cites, files := repoCitations(t, root)
	if files == 0 || len(cites) == 0 {
		t.Fatalf("found %d .go files and %d citations under %s: the scan is broken", files, len(cites), root)
	}
	undefined := map[rule][]string{}
	for _, ci := range cites {
		if !c.defines(ci.rule) {
			undefined[ci.rule] = append(undefined[ci.rule], ci.at)
		}
	}
	if len(undefined) == 0 {
		t.Logf("%d citations in %d .go files, all defined in CONTRACT.md", len(cites), files)
		return
	}
	rules := make([]rule, 0, len(undefined))
	for r := range undefined {
		rules = append(rules, r)
	}
	sort.Slice(rules, func(i, j int) bool { return rules[i].less(rules[j]) })
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "\n  %s cited at %s", r, strings.Join(slices.Compact(undefined[r]), ", "))
	}
	t.Errorf("the code cites rules that CONTRACT.md does not define:%s", b.String())
}

// TestExtraction pins the citation forms the scan understands, so that a
// broken pattern cannot quietly find nothing.
func TestExtraction(t *testing.T) {
	src := []byte(`package x

// R13.5: abort wins (see R4, R10.4's outcomes and TestR11_3_Reference).
func TestR13_5_StreamCancelWhilePaused(t *testing.T) {
	assert(t, "R2.5: the exact payload", "R3.2/R6.1")
	var aR4_2, R9 int // identifiers that are not test names cite nothing
}

func TestProviders_R4_2_PermanentStatuses(t *testing.T)  {}
func TestR17_1NoticesNeverInTranscript(t *testing.T)     {}
func TestR5_RetryAfterThroughTheEngine(t *testing.T)     {}
func TestR8AdmissionPromptAnswers(t *testing.T)          {}
func TestProviders_R15_READMEStatesTheDeclarations(t *testing.T) {}
func TestRFC850AndR2d2AndTestR(t *testing.T)             {}
func BenchmarkR14_2_Decode(b *testing.B)                 {}
func TestProviders_R5_429RetryAfterSeconds(t *testing.T) {}

/* R18 and R4.9 are found, so that they can be reported.
   HTTP/1.1, RFC 850, PR12 and XR1 are not citations. */
`)
	var got []string
	for _, c := range goCitations("x.go", src) {
		got = append(got, c.rule.String()+"@"+strings.TrimPrefix(c.at, "x.go:"))
	}
	want := []string{
		"R13.5@3", "R4@3", "R10.4@3", "R11.3@3",
		"R13.5@4",
		"R2.5@5", "R3.2@5", "R6.1@5",
		"R4.2@9", "R17.1@10", "R5@11", "R8@12", "R15@13", "R14.2@15", "R5@16",
		"R18@18", "R4.9@18",
	}
	if !slices.Equal(got, want) {
		t.Errorf("citations:\n got %v\nwant %v", got, want)
	}
}

// TestParseContract pins what counts as a definition and what is reported.
func TestParseContract(t *testing.T) {
	c := parseContract(strings.Join([]string{
		"# The recovery contract",
		"Prose that mentions R4.6 defines nothing.",
		"## R1. Opt-in",
		`- <a id="r1.1"></a>**R1.1** Defined.`,
		`- <a id="r1.3"></a>**R1.2** Wrong anchor.`,
		`- <a id="r2.1"></a>**R2.1** Under the wrong heading.`,
		`- <a id="r1.1"></a>**R1.1** Twice.`,
		`- **R1.4** No anchor.`,
		"## R2 No dot",
		"```",
		`- <a id="r9.9"></a>**R9.9** In a code block.`,
		"```",
	}, "\n"))
	if want := []rule{{1, 1}, {1, 2}, {2, 1}}; !slices.Equal(c.rules, want) {
		t.Errorf("rules = %v, want %v", c.rules, want)
	}
	if !c.sections[1] || len(c.sections) != 1 {
		t.Errorf("sections = %v, want only R1", c.sections)
	}
	wantProblems := []string{
		`line 5: R1.2 has anchor id "r1.3", want "r1.2"`,
		`line 6: R2.1 is not under its heading "## R2. …"`,
		`line 7: R1.1 is defined again (first on line 4)`,
		`line 8: malformed rule definition`,
		`line 9: malformed rule definition`,
	}
	if len(c.problems) != len(wantProblems) {
		t.Fatalf("problems = %q, want %d", c.problems, len(wantProblems))
	}
	for i, p := range wantProblems {
		if !strings.HasPrefix(c.problems[i], p) {
			t.Errorf("problem %d = %q, want prefix %q", i, c.problems[i], p)
		}
	}
	if !c.defines(rule{1, 0}) || !c.defines(rule{1, 1}) || c.defines(rule{2, 0}) || c.defines(rule{1, 4}) {
		t.Error("defines does not follow the sections and rules parsed")
	}
}

// TestRepoRootIsFoundByModulePath: the root is found by its module path,
// not by the first go.mod (examples/ and tools/ hold modules of their own).
func TestRepoRootIsFoundByModulePath(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "CONTRACT.md")); errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no CONTRACT.md at the repository root %s", root)
	}
	for in, want := range map[string]string{
		"module " + modulePath + "\n\ngo 1.26\n":         modulePath,
		"// c\nmodule \"" + modulePath + "/examples\"\n": modulePath + "/examples",
		"modulex foo\n": "",
	} {
		if got := moduleOf([]byte(in)); got != want {
			t.Errorf("moduleOf(%q) = %q, want %q", in, got, want)
		}
	}
}
