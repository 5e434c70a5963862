package secretbox

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestDeriveKey: a derived key is stable for its key and purpose, differs
// by purpose and by key, is not the sealing key, and refuses a short key.
func TestDeriveKey(t *testing.T) {
	master := bytes.Repeat([]byte{7}, KeySize)
	a, err := DeriveKey(master, "almoner event-feed cursor v2", 32)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := DeriveKey(master, "almoner event-feed cursor v2", 32)
	other, _ := DeriveKey(master, "another purpose", 32)
	otherKey, _ := DeriveKey(bytes.Repeat([]byte{8}, KeySize), "almoner event-feed cursor v2", 32)
	if !bytes.Equal(a, again) || len(a) != 32 {
		t.Fatalf("not stable: %x, %x", a, again)
	}
	for name, b := range map[string][]byte{"other purpose": other, "other key": otherKey, "the sealing key": master} {
		if bytes.Equal(a, b) {
			t.Errorf("same key as %s", name)
		}
	}
	// RFC 5869 with SHA-256, no salt, the purpose as info, pinned (the
	// value was checked against a separate HMAC-only computation): a change
	// would make every cursor already issued invalid.
	if got, want := hex.EncodeToString(a), "679a438adbb7c74fd8d01adf7ed3f418257c0fe50b6a6e456a541502601c2ad0"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := DeriveKey(master[:16], "x", 32); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}
