// Package ttlcache is a small read-through cache with a time to live, for
// answers services ask another service for on every request but which
// change rarely (a tenant's default currency, its feature flags).
package ttlcache

import (
	"context"
	"sync"
	"time"
)

// maxEntries bounds the map. Keys are tenants, which number in the
// thousands; past this, expired entries are swept, and if that is not
// enough the map starts again empty.
const maxEntries = 10000

// Cache remembers load's answer per key for a TTL. Errors are not cached:
// the next Get asks again.
type Cache[V any] struct {
	load func(context.Context, string) (V, error)
	ttl  time.Duration
	now  func() time.Time

	mu sync.Mutex
	m  map[string]entry[V]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// New returns a cache that calls load on a miss and keeps answers for ttl.
func New[V any](ttl time.Duration, load func(context.Context, string) (V, error)) *Cache[V] {
	return &Cache[V]{load: load, ttl: ttl, now: time.Now, m: map[string]entry[V]{}}
}

// SetClock replaces the clock, for tests that move time.
func (c *Cache[V]) SetClock(now func() time.Time) { c.now = now }

// Get returns key's answer, from memory while it is younger than the TTL.
func (c *Cache[V]) Get(ctx context.Context, key string) (V, error) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.v, nil
	}
	v, err := c.load(ctx, key)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if len(c.m) >= maxEntries {
		for k, old := range c.m {
			if !now.Before(old.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxEntries {
			clear(c.m)
		}
	}
	c.m[key] = entry[V]{v: v, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return v, nil
}
