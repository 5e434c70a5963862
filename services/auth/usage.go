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
type usageTracker struct {
	store   *store.Store
	mu      sync.Mutex
	pending map[uuid.UUID]store.KeyUse
}

func newUsageTracker(st *store.Store) *usageTracker {
	return &usageTracker{store: st, pending: map[uuid.UUID]store.KeyUse{}}
}

// Touch records a use of the key at t.
func (u *usageTracker) Touch(tenantID, keyID uuid.UUID, t time.Time) {
	u.mu.Lock()
	u.pending[keyID] = store.KeyUse{TenantID: tenantID, KeyID: keyID, At: t}
	u.mu.Unlock()
}

// Pending returns the unwritten last use of a key, if any.
func (u *usageTracker) Pending(keyID uuid.UUID) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	v, ok := u.pending[keyID]
	return v.At, ok
}

// Flush writes the pending uses. On failure they are kept for the next try
// unless a newer use of the same key arrived meanwhile.
func (u *usageTracker) Flush(ctx context.Context) error {
	u.mu.Lock()
	batch := u.pending
	u.pending = make(map[uuid.UUID]store.KeyUse, len(batch))
	u.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	uses := make([]store.KeyUse, 0, len(batch))
	for _, v := range batch {
		uses = append(uses, v)
	}
	if err := u.store.TouchKeys(ctx, uses); err != nil {
		u.mu.Lock()
		for id, v := range batch {
			if cur, ok := u.pending[id]; !ok || cur.At.Before(v.At) {
				u.pending[id] = v
			}
		}
		u.mu.Unlock()
		return err
	}
	return nil
}
