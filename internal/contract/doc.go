// Package contract holds only tests: they keep CONTRACT.md, the recovery
// contract at the repository root, and the code honest with each other.
// Every rule the code cites by number (in comments, string literals and
// test names such as TestR13_5_StreamCancelWhilePaused) must be defined in
// CONTRACT.md, and CONTRACT.md must define exactly the numbered rules of
// the contract, each under its own section heading.
package contract
