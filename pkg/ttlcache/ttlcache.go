// Package ttlcache is a small read-through cache with a time to live, for
// answers services ask another service for on every request but which
// change rarely (a tenant's default currency).
package ttlcache

import (
	"container/list"
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// maxEntries bounds the map. Keys are tenants, which number in the
// thousands; past this, the oldest entry makes room for each new one, so a
// full cache keeps serving its recent tenants instead of starting empty.
const maxEntries = 10000

// Cache remembers load's answer per key for a TTL. Concurrent misses of one
// key share a single load (at start-up, or when a busy tenant's entry
// expires, N requests would otherwise make N calls to the service behind
// it). Errors are not cached: the next Get asks again.
type Cache[V any] struct {
	load  func(context.Context, string) (V, error)
	ttl   time.Duration
	now   func() time.Time
	max   int
	group singleflight.Group

	mu sync.Mutex
	m  map[string]*list.Element // of *entry[V]
	// order holds the entries oldest first. Every entry lives ttl from the
	// start of its load, so the front is also the first to expire.
	order list.List
}

type entry[V any] struct {
	key     string
	v       V
	expires time.Time
}

// New returns a cache that calls load on a miss and keeps answers for ttl.
func New[V any](ttl time.Duration, load func(context.Context, string) (V, error)) *Cache[V] {
	return &Cache[V]{load: load, ttl: ttl, now: time.Now, max: maxEntries, m: map[string]*list.Element{}}
}

// SetClock replaces the clock, for tests that move time.
func (c *Cache[V]) SetClock(now func() time.Time) { c.now = now }

// loaded is a shared load's answer, with whether the context of the caller
// that ran it had ended: then its failure is that caller's, not the key's.
type loaded[V any] struct {
	v        V
	ctxEnded bool
}

// Get returns key's answer, from memory while it is younger than the TTL.
// On a miss it waits for the load already under way for key, if any, or
// starts one. A load runs with the context of the caller that started it;
// if that caller gives up, the others, whose contexts are live, load again
// rather than inherit its cancellation.
func (c *Cache[V]) Get(ctx context.Context, key string) (V, error) {
	if v, ok := c.cached(key, c.now()); ok {
		return v, nil
	}
	for {
		ch := c.group.DoChan(key, func() (any, error) {
			start := c.now()
			if v, ok := c.cached(key, start); ok {
				// A load that ended just before this one began answered.
				return loaded[V]{v: v}, nil
			}
			v, err := c.load(ctx, key)
			if err != nil {
				return loaded[V]{v: v, ctxEnded: ctx.Err() != nil}, err
			}
			c.store(key, v, start.Add(c.ttl))
			return loaded[V]{v: v}, nil
		})
		select {
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		case r := <-ch:
			l, _ := r.Val.(loaded[V])
			if r.Err != nil && l.ctxEnded && ctx.Err() == nil {
				continue
			}
			return l.v, r.Err
		}
	}
}

// cached returns key's answer if it has one that has not expired at now.
func (c *Cache[V]) cached(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok {
		if e := el.Value.(*entry[V]); now.Before(e.expires) {
			return e.v, true
		}
	}
	var zero V
	return zero, false
}

// store keeps v for key until expires, making room first when the cache
// is full by dropping the oldest entry, which is also the first to expire
// (or to have expired).
func (c *Cache[V]) store(key string, v V, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok {
		e := el.Value.(*entry[V])
		e.v, e.expires = v, expires
		c.order.MoveToBack(el)
		return
	}
	for len(c.m) >= c.max {
		front := c.order.Front()
		c.order.Remove(front)
		delete(c.m, front.Value.(*entry[V]).key)
	}
	c.m[key] = c.order.PushBack(&entry[V]{key: key, v: v, expires: expires})
}
