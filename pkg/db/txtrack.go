package db

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// Transaction tracking proves a rule the tests hold the code to: no
// network call (a payment processor, another service) runs while a
// transaction is open, where a slow peer would hold row locks and a pooled
// connection for as long as it takes. With tracking on (a test's
// TestMain calls TrackTransactions), InTx notes the goroutine it runs on,
// and OutsideTx refuses a call made from inside one. Off, as in
// production, OutsideTx is one atomic load.
var (
	tracking atomic.Bool
	// openTx counts InTx calls open per goroutine id.
	openTx sync.Map // uint64 → *atomic.Int32
)

// ErrCalledInTransaction is OutsideTx's refusal.
var ErrCalledInTransaction = errors.New("network call made inside a database transaction")

// TrackTransactions turns transaction tracking on for the process.
func TrackTransactions() { tracking.Store(true) }

// OutsideTx returns ErrCalledInTransaction when tracking is on and the
// calling goroutine is inside InTx; call it before a network call.
func OutsideTx() error {
	if !tracking.Load() {
		return nil
	}
	if n, ok := openTx.Load(goroutineID()); ok && n.(*atomic.Int32).Load() > 0 {
		return ErrCalledInTransaction
	}
	return nil
}

// enterTx notes a transaction opened on this goroutine and returns its
// undo; nothing when tracking is off.
func enterTx() func() {
	if !tracking.Load() {
		return func() {}
	}
	v, _ := openTx.LoadOrStore(goroutineID(), new(atomic.Int32))
	n := v.(*atomic.Int32)
	n.Add(1)
	return func() { n.Add(-1) }
}

// goroutineID reads the calling goroutine's id from its stack header
// ("goroutine 123 [running]:"); tracking's cost, paid only when on.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
