// Package scripted is a temporary forwarding shim while recourse's tests move
// to package recoursetest, which now holds the scripted loopback provider.
// It is removed once nothing imports it.
package scripted

import "github.com/recourse-dev/recourse/recoursetest"

// The types of package recoursetest under their old names.
type (
	// Server is recoursetest.Server.
	Server = recoursetest.Server
	// Step is recoursetest.Step.
	Step = recoursetest.Step
	// Request is recoursetest.Request.
	Request = recoursetest.Request
	// Target is recoursetest.Target.
	Target = recoursetest.Target
)

// The constants of package recoursetest under their old names.
const (
	// OpenAIModel is recoursetest.OpenAIModel.
	OpenAIModel = recoursetest.OpenAIModel
	// OpenAIID is recoursetest.OpenAIID.
	OpenAIID = recoursetest.OpenAIID
	// OllamaModel is recoursetest.OllamaModel.
	OllamaModel = recoursetest.OllamaModel
	// StreamDone is recoursetest.StreamDone.
	StreamDone = recoursetest.StreamDone
	// ContentTypeJSON is recoursetest.ContentTypeJSON.
	ContentTypeJSON = recoursetest.ContentTypeJSON
	// ContentTypeSSE is recoursetest.ContentTypeSSE.
	ContentTypeSSE = recoursetest.ContentTypeSSE
	// ContentTypeNDJSON is recoursetest.ContentTypeNDJSON.
	ContentTypeNDJSON = recoursetest.ContentTypeNDJSON
	// ResponsesID is recoursetest.ResponsesID.
	ResponsesID = recoursetest.ResponsesID
	// ResponsesPath is recoursetest.ResponsesPath.
	ResponsesPath = recoursetest.ResponsesPath
)

// The functions of package recoursetest under their old names.
var (
	New                 = recoursetest.NewServer
	NewTarget           = recoursetest.NewTarget
	JSON                = recoursetest.JSON
	SSE                 = recoursetest.SSE
	NDJSON              = recoursetest.NDJSON
	Redirect            = recoursetest.Redirect
	Reset               = recoursetest.Reset
	OpenAIChat          = recoursetest.OpenAIChat
	OpenAIError         = recoursetest.OpenAIError
	OpenAIStream        = recoursetest.OpenAIStream
	OllamaChat          = recoursetest.OllamaChat
	OllamaError         = recoursetest.OllamaError
	OllamaStream        = recoursetest.OllamaStream
	ResponsesEvents     = recoursetest.ResponsesEvents
	ResponsesJSON       = recoursetest.ResponsesJSON
	ResponsesBackground = recoursetest.ResponsesBackground
	ResponsesResume     = recoursetest.ResponsesResume
	ResponsesRetrieve   = recoursetest.ResponsesRetrieve
	ResponsesCancel     = recoursetest.ResponsesCancel
)
