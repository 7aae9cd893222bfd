// Package faults is recourse's real-network fault suite: its tests run the
// default chain, with the stall limits of package layers/stall, through
// Toxiproxy (github.com/Shopify/toxiproxy/v2, its server started in the
// test on loopback) in front of a loopback provider, and assert the outcome
// each TCP fault must reach: latency, a bandwidth limit, the slicer (bytes
// cut into tiny packets: the stream framers must hold), reset_peer before
// and after output, and timeout (a connection that stops answering),
// including which stall limit fires.
//
// It is its own module so that Toxiproxy and its dependencies never reach
// the core module. Its limits are real time, kept short (a few hundred
// milliseconds); the tests assert outcomes, never durations. Run it with
// make faults.
package faults
