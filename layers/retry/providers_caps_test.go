package retry_test

// R15 per provider: every codec declares the five capabilities with their
// evidence; a custom codec that omits one is refused by chain.Default and
// chain.New; and capabilities never change eligibility or admission.

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/codecs/ollama"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/rigtest"
	"github.com/recourse-dev/recourse/layers/retry"
)

// pvR15Values are the values of R15.2, as inspected on 2026-10-17.
var pvR15Values = map[codec.Capability]codec.Support{
	codec.ClientAbort:             codec.Unknown,
	codec.RequestCancellation:     codec.Unsupported,
	codec.RequestStatus:           codec.Unsupported,
	codec.Idempotency:             codec.Unsupported,
	codec.ExactAttemptTermination: codec.Unknown,
}

// pvR15Endpoint is the exact endpoint R15.2 names for each provider.
var pvR15Endpoint = map[codec.Provider]string{
	codec.OpenAI: "POST /v1/chat/completions",
	codec.OMLX:   "POST /v1/chat/completions",
	codec.Ollama: "POST /api/chat",
}

func TestProviders_R15_2_CapabilitiesAsInspected(t *testing.T) {
	pvEach(t, func(t *testing.T, p pvProv) {
		c := p.codec()
		caps := c.Capabilities()

		require.NoError(t, caps.Validate(), "R15.1: five values, each with complete evidence")
		assert.Equal(t, pvR15Values, caps.Values, "R15.2")
		require.Len(t, caps.Evidence, len(codec.AllCapabilities()))
		for _, k := range codec.AllCapabilities() {
			ev, ok := caps.Evidence[k]
			require.True(t, ok, "evidence for %s", k)
			assert.Equal(t, pvR15Endpoint[p.provider], ev.Endpoint, "%s: the exact endpoint", k)
			assert.Equal(t, "POST "+c.Path(), ev.Endpoint, "%s: the endpoint the codec posts to", k)
			assert.Equal(t, "2026-10-17", ev.InspectedOn, "%s: the inspection date", k)
			u, err := url.Parse(ev.DocumentationURL)
			require.NoError(t, err)
			assert.Equal(t, "https", u.Scheme, "%s: a provider documentation URL", k)
			assert.NotEmpty(t, u.Host)
			assert.NotEmpty(t, strings.TrimSpace(ev.Basis), "%s: the basis", k)
		}
		// Local HTTP abort alone never justifies supported (R15.2).
		assert.NotEqual(t, codec.Supported, caps.Values[codec.ClientAbort])

		// Every call returns fresh maps.
		caps.Values[codec.ClientAbort] = codec.Supported
		delete(caps.Evidence, codec.Idempotency)
		again := c.Capabilities()
		assert.Equal(t, pvR15Values, again.Values)
		assert.NoError(t, again.Validate())

		// The codec the chain carries declares the same.
		r := p.rig(t, retry.Policy{})
		assert.Equal(t, pvR15Values, r.Chain.Codec().Capabilities().Values)
	})
}

// pvCapsCodec is a custom codec: the OpenAI codec with its own declaration.
type pvCapsCodec struct {
	*openai.Codec
	caps codec.Capabilities
}

func (c pvCapsCodec) Capabilities() codec.Capabilities { return c.caps }

// pvOllamaCaps is the Ollama codec with its own declaration.
type pvOllamaCaps struct {
	*ollama.Codec
	caps codec.Capabilities
}

func (c pvOllamaCaps) Capabilities() codec.Capabilities { return c.caps }

// pvCaps returns a copy of the OpenAI declaration with edit applied.
func pvCaps(edit func(*codec.Capabilities)) codec.Capabilities {
	c := openai.New().Capabilities()
	if edit != nil {
		edit(&c)
	}
	return c
}

// pvAll returns a declaration of v for every capability, with evidence.
func pvAll(v codec.Support) codec.Capabilities {
	return pvCaps(func(c *codec.Capabilities) {
		for _, k := range codec.AllCapabilities() {
			c.Values[k] = v
		}
	})
}

// R15.2: a custom codec must supply all five values and their evidence;
// chain.Default and chain.New refuse one that does not, with an error that
// names the capability.
func TestProviders_R15_2_CustomCodecMustDeclareEverything(t *testing.T) {
	type row struct {
		name string
		caps codec.Capabilities
		want string // in the error message
	}
	var rows []row
	for _, k := range codec.AllCapabilities() {
		rows = append(rows,
			row{"value of " + string(k) + " omitted", pvCaps(func(c *codec.Capabilities) { delete(c.Values, k) }), string(k)},
			row{"value of " + string(k) + " invalid", pvCaps(func(c *codec.Capabilities) { c.Values[k] = "maybe" }), string(k)},
			row{"evidence of " + string(k) + " omitted", pvCaps(func(c *codec.Capabilities) { delete(c.Evidence, k) }), string(k)},
		)
	}
	blank := func(f func(*codec.CapabilityEvidence)) codec.Capabilities {
		return pvCaps(func(c *codec.Capabilities) {
			ev := c.Evidence[codec.Idempotency]
			f(&ev)
			c.Evidence[codec.Idempotency] = ev
		})
	}
	rows = append(rows,
		row{"evidence without endpoint", blank(func(e *codec.CapabilityEvidence) { e.Endpoint = "" }), string(codec.Idempotency)},
		row{"evidence without documentation URL", blank(func(e *codec.CapabilityEvidence) { e.DocumentationURL = "" }), string(codec.Idempotency)},
		row{"evidence without inspection date", blank(func(e *codec.CapabilityEvidence) { e.InspectedOn = "" }), string(codec.Idempotency)},
		row{"evidence without basis", blank(func(e *codec.CapabilityEvidence) { e.Basis = "" }), string(codec.Idempotency)},
		row{"nothing declared", codec.Capabilities{}, string(codec.ClientAbort)},
	)
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			cdc := pvCapsCodec{Codec: openai.New(), caps: tc.caps}
			require.Error(t, tc.caps.Validate())

			ch, err := chain.Default(cdc, chain.WithPolicy(retry.Policy{}))
			require.Error(t, err, "chain.Default refuses incomplete capabilities")
			assert.Nil(t, ch)
			assert.Contains(t, err.Error(), "capabilities are incomplete")
			assert.Contains(t, err.Error(), tc.want, "the error names the capability")

			rl, err := retry.New(cdc, &retry.Policy{})
			require.NoError(t, err)
			ch, err = chain.New(rl)
			require.Error(t, err, "chain.New refuses incomplete capabilities")
			assert.Nil(t, ch)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("a complete custom declaration is accepted", func(t *testing.T) {
		cdc := pvCapsCodec{Codec: openai.New(), caps: pvAll(codec.Supported)}
		_, err := chain.Default(cdc)
		require.NoError(t, err)
		rl, err := retry.New(cdc, &retry.Policy{})
		require.NoError(t, err)
		_, err = chain.New(rl)
		require.NoError(t, err)
	})
}

// R15.2: capabilities never change eligibility or admission. An Ollama
// codec that claims every capability is supported still needs admission;
// an OpenAI codec that claims nothing is supported still retries.
func TestProviders_R15_2_CapabilitiesNeverChangeEligibilityOrAdmission(t *testing.T) {
	ol := pvRow(t, codec.Ollama)
	oa := pvRow(t, codec.OpenAI)

	t.Run("ollama claiming everything supported", func(t *testing.T) {
		cdc := pvOllamaCaps{Codec: ollama.New(), caps: pvAll(codec.Supported)}
		r := rigtest.New(t, cdc, retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, ol.statusStep(503), ol.okStep("never"))
		_, err := r.Client.Complete(context.Background(), ol.request())
		pvAdmissionRequiredCheck(t, ol, r, err, 503)
	})
	for _, v := range []codec.Support{codec.Supported, codec.Unsupported, codec.Unknown} {
		t.Run("openai claiming everything "+string(v), func(t *testing.T) {
			cdc := pvCapsCodec{Codec: openai.New(), caps: pvAll(v)}
			r := rigtest.New(t, cdc, retry.Policy{MaxAttempts: 3, Jitter: zeroJitter}, oa.statusStep(503), oa.statusStep(400), oa.okStep("ok"))
			comp, err := r.Client.Complete(context.Background(), oa.request())
			require.Error(t, err)
			re := asRecoveryError(t, err)
			assert.Nil(t, comp)
			assert.Equal(t, event.OutcomeInterrupted, re.Outcome, "400 stays permanent")
			require.Len(t, re.History, 2, "503 was retried without a hook")
			assert.Equal(t, event.Classification{Eligible: true, Reason: event.ReasonTransient}, re.History[0].Classification)
			assert.Equal(t, event.Classification{Reason: event.ReasonPermanent}, re.History[1].Classification)
			assert.Equal(t, 2, r.Server.Count())
		})
	}
}

// The Capabilities section of docs/wires.md states what the codecs declare:
// one table per provider with the five values, the documentation URL of the
// evidence and the inspection date.
func TestProviders_R15_DocsStateTheDeclarations(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "wires.md"))
	require.NoError(t, err)
	readme := string(b)
	start := strings.Index(readme, "\n## Capabilities\n")
	require.GreaterOrEqual(t, start, 0, "docs/wires.md has a Capabilities section")
	end := strings.Index(readme[start+1:], "\n## ")
	require.Positive(t, end)
	section := readme[start : start+1+end]
	assert.Contains(t, section, "A custom host or proxy may differ, and capabilities never change\neligibility or admission")
	names := map[codec.Provider]string{codec.OpenAI: "OpenAI", codec.OMLX: "oMLX", codec.Ollama: "Ollama"}
	pvEach(t, func(t *testing.T, p pvProv) {
		caps := p.codec().Capabilities()
		heading := names[p.provider] + ", `" + pvR15Endpoint[p.provider] + "`"
		i := strings.Index(section, heading)
		require.GreaterOrEqual(t, i, 0, "a table for %s", p.name)
		// The table is the run of "|" lines that follows the heading.
		var rows []string
		for _, line := range strings.Split(section[i:], "\n")[1:] {
			if strings.HasPrefix(line, "|") {
				rows = append(rows, line)
			} else if len(rows) > 0 {
				break
			}
		}
		table := strings.Join(rows, "\n")
		require.Len(t, rows, 2+len(codec.AllCapabilities()), "header, separator and five rows")
		for _, k := range codec.AllCapabilities() {
			ev := caps.Evidence[k]
			row := "(`" + pvGoName(k) + "`) | `" + string(caps.Values[k]) + "` | [" + ev.Endpoint + "](" + ev.DocumentationURL + ") | " + ev.InspectedOn + " |"
			assert.Contains(t, table, row, "%s %s", p.name, k)
		}
	})
}

// pvGoName is the Go name of a capability: client_abort → ClientAbort.
func pvGoName(k codec.Capability) string {
	var b strings.Builder
	for _, part := range strings.Split(string(k), "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
