package codec

// Provider names the provider family a codec speaks to.
type Provider string

// The providers recourse ships codecs for.
const (
	OpenAI Provider = "openai"
	Ollama Provider = "ollama"
	OMLX   Provider = "omlx"
	// Anthropic is Claude's Messages API (codecs/anthropic, R22).
	Anthropic Provider = "anthropic"
	// Gemini is Google's Gemini API (generateContent).
	Gemini Provider = "gemini"
)

// Operation is the kind of completion call (R10.2).
type Operation string

// The operations of R10.2.
const (
	Ordinary   Operation = "ordinary"
	Structured Operation = "structured"
	Streaming  Operation = "streaming"
)
