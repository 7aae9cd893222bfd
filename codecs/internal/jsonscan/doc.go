// Package jsonscan finds semantic output in a possibly truncated JSON
// document without decoding it.
//
// recourse may retry an LLM completion only while no semantic output
// (reasoning text, content text, tool-call fragments) has been observed.
// For an ordinary, non-streaming JSON response body that was cut off in
// transfer, encoding/json cannot help: it rejects the truncated document as a
// whole. A [Scanner] instead consumes the bytes that did arrive, in as many
// Write calls as convenient, and reports in [Counts] how much semantic
// evidence the prefix already contains.
//
// # Classification
//
// Evidence is classified by meaning, never by pattern: the scanner runs a
// complete JSON tokenizer and tracks the path of object keys from the root
// to the current value, with array indices ignored (so the message content of
// an OpenAI response is at choices.message.content). [Rules] lists which
// paths count as content, as reasoning, as arrays of tool calls and as single
// tool-call objects. Keys are compared exactly (case-sensitive, byte for
// byte) after JSON unescaping, so "con\u0074ent" is the key content, while a
// string value that merely looks like a key ("id":"content", or an escaped
// "\"content\": \"x\"" inside another string) never counts.
//
// # What is counted
//
//   - ContentBytes and ReasoningBytes sum the decoded UTF-8 length of every
//     string value at a matching path, including a string cut mid-way (what
//     was decoded so far counts). Non-string values (null, numbers, booleans,
//     objects) contribute nothing themselves; strings inside an array at a
//     matching path count, because array indices are not part of a path.
//   - A \uXXXX escape counts the UTF-8 length of the rune it denotes. A valid
//     surrogate pair counts 4 bytes. A lone surrogate counts 3 bytes, the
//     length of U+FFFD that encoding/json substitutes for it. A high surrogate
//     counts 3 bytes as soon as it is decoded and 1 more once the matching low
//     surrogate completes the pair, so counts never decrease as bytes arrive.
//   - Raw bytes inside strings are counted as they are, one each, whether or
//     not they form valid UTF-8. Malformed UTF-8 is not an error here;
//     reporting it is left to the decoder that handles the full document.
//   - ToolFragments counts tool-call objects that have started: an object
//     that is an element of an array at a ToolCalls path, or any object at a
//     ToolObjects path (the legacy function_call). Elements that are not
//     objects (null, strings, numbers) are not tool calls. CompletedToolCalls
//     counts those objects whose closing brace was seen. An object that
//     matches both kinds of rule counts once.
//
// Counts depend only on the bytes, never on how they were split across Write
// calls: a document split at any byte, including inside a key, an escape
// sequence, a multibyte UTF-8 sequence or a surrogate pair, yields the same
// counts as the unsplit document.
//
// # Syntax and limits
//
// The scanner accepts exactly the prefixes of the documents that
// encoding/json.Valid accepts, with leading and trailing whitespace (the
// keepalive spaces some servers send before the body are harmless). The first
// byte that cannot continue any valid document yields a [*SyntaxError] that
// carries the byte offset and a message that never quotes document bytes;
// from then on the scanner is stuck and its counts are frozen. A complete
// top-level value followed by anything other than whitespace is a syntax
// error, so concatenated documents (NDJSON) must be scanned one at a time.
//
// Memory use is bounded by nesting depth, not by document size: strings are
// decoded incrementally without being buffered, and only the current object
// key is kept. Nesting deeper than [MaxDepth] is reported as a syntax error
// even though encoding/json would accept it. Keys whose decoded form is
// longer than 64 bytes are scanned but never match a rule. After the first
// Write, scanning allocates nothing.
package jsonscan
