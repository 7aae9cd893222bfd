package retry

import (
	"regexp"
	"testing"

	"github.com/google/uuid"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestNewUUIDs checks that the identity UUIDs are canonical random (version
// 4, RFC 4122 variant) UUIDs, distinct, and parse as such (R10.1).
func TestNewUUIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		for _, n := range []int{1, 2} {
			s := newUUIDs(n)
			if len(s) != n*uuidLen {
				t.Fatalf("newUUIDs(%d) has length %d", n, len(s))
			}
			for i := range n {
				id := s[i*uuidLen : (i+1)*uuidLen]
				if !uuidV4.MatchString(id) {
					t.Fatalf("%q is not a canonical version 4 UUID", id)
				}
				u, err := uuid.Parse(id)
				if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
					t.Fatalf("%q: parsed as %v version %v variant %v (%v)", id, u, u.Version(), u.Variant(), err)
				}
				if seen[id] {
					t.Fatalf("%q repeats", id)
				}
				seen[id] = true
			}
		}
	}
	if raceEnabled {
		return // the race detector adds allocations
	}
	if n := testing.AllocsPerRun(100, func() { _ = newUUIDs(2) }); n != 1 {
		t.Errorf("newUUIDs allocates %v times, want 1", n)
	}
}
