package auth

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/almoner/almoner/services/auth/store"
)

// usageTracker remembers when each key was last used and writes those
// times in batches, so that validating a key never writes to the database.
//
// A key's shown lastUsedAt is the later of its row and the tracker's
// unwritten use, so the tracker keeps a batch visible while it is being
// written: were it forgotten before the write committed, a list read in
// between would show the older row value, and lastUsedAt would step back.
type usageTracker struct {
	write func(context.Context, []store.KeyUse) error

	flushMu  sync.Mutex // one flush at a time (the ticker and Stop)
	mu       sync.Mutex
	pending  map[uuid.UUID]store.KeyUse
	flushing map[uuid.UUID]store.KeyUse // the batch being written
}

func newUsageTracker(write func(context.Context, []store.KeyUse) error) *usageTracker {
	return &usageTracker{write: write, pending: map[uuid.UUID]store.KeyUse{}}
}

// Touch records a use of the key at t. An older use than one already
// recorded (reports from replicas arrive out of order) changes nothing.
// Times are kept at the database's microsecond precision so that a shown
// value does not change when it is written.
func (u *usageTracker) Touch(tenantID, keyID uuid.UUID, t time.Time) {
	t = t.Truncate(time.Microsecond)
	u.mu.Lock()
	if cur, ok := u.pending[keyID]; !ok || cur.At.Before(t) {
		u.pending[keyID] = store.KeyUse{TenantID: tenantID, KeyID: keyID, At: t}
	}
	u.mu.Unlock()
}

// PendingOf returns the unwritten last uses of the tenant's keys, by key:
// recorded, or in a batch whose write has not yet committed. A list reads
// them before it reads the rows: a use read here that a flush writes
// meanwhile is in the rows the list then reads, whereas one looked up
// after the rows were read could have been written after that read and
// be in neither, and lastUsedAt would step back.
func (u *usageTracker) PendingOf(tenantID uuid.UUID) map[uuid.UUID]time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[uuid.UUID]time.Time{}
	for _, batch := range []map[uuid.UUID]store.KeyUse{u.flushing, u.pending} {
		for id, v := range batch {
			if v.TenantID == tenantID && v.At.After(out[id]) {
				out[id] = v.At
			}
		}
	}
	return out
}

// Flush writes the pending uses. On failure they are kept for the next try
// unless a newer use of the same key arrived meanwhile.
func (u *usageTracker) Flush(ctx context.Context) error {
	u.flushMu.Lock()
	defer u.flushMu.Unlock()
	u.mu.Lock()
	batch := u.pending
	u.pending = make(map[uuid.UUID]store.KeyUse, len(batch))
	u.flushing = batch
	u.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	uses := make([]store.KeyUse, 0, len(batch))
	for _, v := range batch {
		uses = append(uses, v)
	}
	err := u.write(ctx, uses)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.flushing = nil
	if err != nil {
		for id, v := range batch {
			if cur, ok := u.pending[id]; !ok || cur.At.Before(v.At) {
				u.pending[id] = v
			}
		}
	}
	return err
}
