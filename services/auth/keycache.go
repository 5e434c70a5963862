package auth

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/almoner/almoner/services/auth/store"
)

// invalidateChannel is the PostgreSQL NOTIFY channel of key and tenant
// changes. Payloads: "key:<lookup id>" and "tenant:<tenant id>".
const invalidateChannel = "auth_invalidate"

// keyCache keeps validated credentials in memory so that a request does not
// need a database round trip to authenticate.
//
// It is only used while this replica is LISTENing on invalidateChannel:
// every change that can make a key fail (revocation, tenant deactivation,
// a feature change) sends a NOTIFY in the same transaction, so every
// replica drops the entry when the change commits. When the listening
// connection is lost, the cache is emptied and bypassed until LISTEN is
// back, because notifications sent meanwhile are lost. An epoch counter
// stops a lookup that raced with an invalidation from storing what it read
// before the change.
type keyCache struct {
	maxAge time.Duration

	mu      sync.Mutex
	enabled bool
	epoch   uint64
	entries map[string]cacheEntry
	waiters map[string][]chan struct{}
}

type cacheEntry struct {
	cred store.Credential
	at   time.Time
}

func newKeyCache(maxAge time.Duration) *keyCache {
	return &keyCache{maxAge: maxAge, entries: map[string]cacheEntry{}, waiters: map[string][]chan struct{}{}}
}

// get returns a cached credential younger than maxAge.
func (c *keyCache) get(lookup string, now time.Time) (store.Credential, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[lookup]
	if !ok || !c.enabled || now.Sub(e.at) > c.maxAge {
		return store.Credential{}, false
	}
	return e.cred, true
}

// begin returns the epoch to pass to put after reading from the database.
func (c *keyCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// put stores cred unless an invalidation happened since begin.
func (c *keyCache) put(lookup string, cred store.Credential, epoch uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.enabled || c.epoch != epoch {
		return
	}
	c.entries[lookup] = cacheEntry{cred: cred, at: now}
}

// invalidate applies one notification payload. Only the listener passes
// notified, which wakes the waiters of that payload.
func (c *keyCache) invalidate(payload string, notified bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	switch kind, id, _ := strings.Cut(payload, ":"); kind {
	case "key":
		delete(c.entries, id)
	case "tenant":
		for k, e := range c.entries {
			if e.cred.TenantID.String() == id {
				delete(c.entries, k)
			}
		}
	default:
		clear(c.entries)
	}
	if !notified {
		return
	}
	for _, w := range c.waiters[payload] {
		close(w)
	}
	delete(c.waiters, payload)
}

// setEnabled empties the cache and turns it on or off.
func (c *keyCache) setEnabled(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.enabled = on
	clear(c.entries)
	if !on {
		// Nobody will deliver these now; release the waiters.
		for p, ws := range c.waiters {
			for _, w := range ws {
				close(w)
			}
			delete(c.waiters, p)
		}
	}
}

// expect registers interest in a payload before the change that sends it
// commits; the returned channel closes when this replica's listener has
// received it (or the cache was switched off).
func (c *keyCache) expect(payload string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if !c.enabled {
		close(ch)
		return ch
	}
	c.waiters[payload] = append(c.waiters[payload], ch)
	return ch
}

// cancel drops a waiter whose change did not commit.
func (c *keyCache) cancel(payload string, ch <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := c.waiters[payload]
	for i, w := range ws {
		if w == ch {
			c.waiters[payload] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
}

// listen keeps a dedicated connection LISTENing until ctx ends, enabling the
// cache only while it does.
func (c *keyCache) listen(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := c.listenOnce(ctx, pool)
		c.setEnabled(false)
		if ctx.Err() != nil {
			return
		}
		logger.Warn("auth cache listener lost; validating from the database until it is back", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (c *keyCache) listenOnce(ctx context.Context, pool *pgxpool.Pool) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool for good: it is busy listening.
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+invalidateChannel); err != nil {
		return err
	}
	c.setEnabled(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		c.invalidate(n.Payload, true)
	}
}
