package password

import (
	"strings"
	"testing"
)

var cheap = Params{MemoryKiB: 64, Time: 1, Threads: 1}

func TestHashChecks(t *testing.T) {
	h := Hash("correct horse battery", cheap)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if ok, err := Check("correct horse battery", h); !ok || err != nil {
		t.Errorf("Check(right) = %v, %v", ok, err)
	}
	if ok, err := Check("correct horse batterx", h); ok || err != nil {
		t.Errorf("Check(wrong) = %v, %v", ok, err)
	}
	if first, second := Hash("same", cheap), Hash("same", cheap); first == second {
		t.Error("two hashes of one password are equal: no salt")
	}
	if _, err := Check("x", "$argon2i$v=19$m=64,t=1,p=1$c2FsdA$aGFzaA"); err == nil {
		t.Error("an argon2i hash was read")
	}
}

func TestProblem(t *testing.T) {
	for _, c := range []struct {
		pw, email string
		ok        bool
	}{
		{"short", "a@example.org", false},
		{strings.Repeat("x", 129), "a@example.org", false},
		{strings.Repeat("é", 12), "a@example.org", true},
		{"Jane.Doe@Example.org", "jane.doe@example.org", false},
		{"Password1234", "a@example.org", false},
		{"tidy lantern orbit", "a@example.org", true},
	} {
		if got := Problem(c.pw, c.email) == ""; got != c.ok {
			t.Errorf("Problem(%q) accepted = %v, want %v", c.pw, got, c.ok)
		}
	}
}

// BenchmarkHashDefault measures one hash at the production costs
// (docs/auth.md quotes it): go test -bench HashDefault -benchtime 20x.
func BenchmarkHashDefault(b *testing.B) {
	for b.Loop() {
		Hash("tidy lantern orbit", Default)
	}
}
