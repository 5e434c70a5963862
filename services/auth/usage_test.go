package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/auth/store"
)

// TestUsageStaysVisibleWhileWritten holds a flush inside its write and
// checks that the use being written is still reported as pending: the CI
// run that found this saw a key's lastUsedAt step back to the older row
// value for the length of one write.
func TestUsageStaysVisibleWhileWritten(t *testing.T) {
	tenant, key := uuid.New(), uuid.New()
	at := time.Date(2026, 11, 25, 15, 39, 2, 532757123, time.UTC)
	tests := []struct {
		name     string
		writeErr error
		// pendingAfter: whether the use is still pending once the flush ends.
		pendingAfter bool
	}{
		{name: "write succeeds", writeErr: nil, pendingAfter: false},
		{name: "write fails", writeErr: errors.New("database down"), pendingAfter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inWrite, release := make(chan struct{}), make(chan struct{})
			var written []store.KeyUse
			u := newUsageTracker(func(_ context.Context, uses []store.KeyUse) error {
				written = uses
				close(inWrite)
				<-release
				return tt.writeErr
			})
			u.Touch(tenant, key, at)
			done := make(chan error)
			go func() { done <- u.Flush(context.Background()) }()
			<-inWrite
			got, ok := u.PendingOf(tenant)[key]
			want := at.Truncate(time.Microsecond)
			if !ok || !got.Equal(want) {
				t.Errorf("during the write PendingOf = %v, %v; want %v, true", got, ok, want)
			}
			if other := u.PendingOf(uuid.New()); len(other) != 0 {
				t.Errorf("another tenant's PendingOf = %v, want none", other)
			}
			close(release)
			if err := <-done; !errors.Is(err, tt.writeErr) {
				t.Errorf("Flush = %v, want %v", err, tt.writeErr)
			}
			if len(written) != 1 || !written[0].At.Equal(want) {
				t.Errorf("written %v, want one use at %v", written, want)
			}
			if _, ok := u.PendingOf(tenant)[key]; ok != tt.pendingAfter {
				t.Errorf("after the flush PendingOf has the key = %v, want %v", ok, tt.pendingAfter)
			}
		})
	}
}

// TestUsageKeepsTheLatest: uses reported out of order keep the latest.
func TestUsageKeepsTheLatest(t *testing.T) {
	tenant, key := uuid.New(), uuid.New()
	u := newUsageTracker(func(context.Context, []store.KeyUse) error { return nil })
	later := time.Date(2026, 11, 25, 12, 0, 1, 0, time.UTC)
	u.Touch(tenant, key, later)
	u.Touch(tenant, key, later.Add(-time.Second))
	if got := u.PendingOf(tenant)[key]; !got.Equal(later) {
		t.Errorf("PendingOf = %v, want %v", got, later)
	}
}

// TestUsageNewerDuringWrite: a use recorded while an older one of the
// same key is being written is the one PendingOf answers.
func TestUsageNewerDuringWrite(t *testing.T) {
	tenant, key := uuid.New(), uuid.New()
	at := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC)
	inWrite, release := make(chan struct{}), make(chan struct{})
	u := newUsageTracker(func(context.Context, []store.KeyUse) error {
		close(inWrite)
		<-release
		return nil
	})
	u.Touch(tenant, key, at)
	done := make(chan error)
	go func() { done <- u.Flush(context.Background()) }()
	<-inWrite
	u.Touch(tenant, key, at.Add(time.Second))
	if got := u.PendingOf(tenant)[key]; !got.Equal(at.Add(time.Second)) {
		t.Errorf("PendingOf during the write = %v, want %v", got, at.Add(time.Second))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
