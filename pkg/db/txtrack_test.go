package db

import (
	"errors"
	"sync"
	"testing"
)

// TestOutsideTx: with tracking on, OutsideTx refuses only on the
// goroutine inside a transaction, and again not once it is closed.
func TestOutsideTx(t *testing.T) {
	TrackTransactions()
	if err := OutsideTx(); err != nil {
		t.Fatalf("outside any transaction: %v", err)
	}
	leave := enterTx()
	if err := OutsideTx(); !errors.Is(err, ErrCalledInTransaction) {
		t.Errorf("inside a transaction: %v, want ErrCalledInTransaction", err)
	}
	var other error
	var wg sync.WaitGroup
	wg.Go(func() { other = OutsideTx() })
	wg.Wait()
	if other != nil {
		t.Errorf("another goroutine while this one is in a transaction: %v", other)
	}
	leave()
	if err := OutsideTx(); err != nil {
		t.Errorf("after the transaction: %v", err)
	}
}
