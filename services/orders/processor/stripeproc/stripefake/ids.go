package stripefake

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
)

var seqMu sync.Mutex
var seqN int

// newID returns a Stripe-like id. It is random, so that the ids of two
// fakes in one test (two tenants' end-to-end runs) never collide.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "fake" + hex.EncodeToString(b[:])
}

func nextSeq() int {
	seqMu.Lock()
	defer seqMu.Unlock()
	seqN++
	return seqN
}
