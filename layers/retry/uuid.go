package retry

import (
	"crypto/rand"
	"encoding/hex"
)

// uuidLen is the length of a UUID in its canonical text form.
const uuidLen = 36

// newUUIDs returns n random UUIDs (RFC 4122 version 4, variant 10) in
// canonical form, xxxxxxxx-xxxx-4xxx-Nxxx-xxxxxxxxxxxx with N one of 8, 9, a,
// b, from one read of crypto/rand and in one string allocation: the i-th
// UUID is s[i*36 : (i+1)*36]. They are what google/uuid's NewString returns,
// with fewer allocations. Like it, newUUIDs never fails (crypto/rand.Read
// does not return errors).
func newUUIDs(n int) string {
	var out [2 * uuidLen]byte
	if n > len(out)/uuidLen {
		panic("retry: too many UUIDs at once")
	}
	fillUUIDs(out[:n*uuidLen])
	return string(out[:n*uuidLen])
}

// fillUUIDs writes len(out)/36 (one or two) new UUIDs into out, from one
// read of crypto/rand.
func fillUUIDs(out []byte) {
	var raw [2 * 16]byte
	n := len(out) / uuidLen
	_, _ = rand.Read(raw[:n*16])
	for i := range n {
		u := raw[i*16 : (i+1)*16]
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // variant 10
		d := out[i*uuidLen : (i+1)*uuidLen]
		hex.Encode(d[0:8], u[0:4])
		d[8] = '-'
		hex.Encode(d[9:13], u[4:6])
		d[13] = '-'
		hex.Encode(d[14:18], u[6:8])
		d[18] = '-'
		hex.Encode(d[19:23], u[8:10])
		d[23] = '-'
		hex.Encode(d[24:], u[10:])
	}
}
