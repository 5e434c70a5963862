// Package counter numbers things per tenant: contact ids, the ids of a
// contact's phone, email and address rows, order numbers. Each (tenant,
// name) has one counter row in the owning service's schema, holding the
// last number handed out; a process reserves a block of numbers with one
// statement and hands them out from memory.
//
// Why not one sequence for everything: a shared sequence lets a tenant
// read from its own ids how many contacts every other tenant created. Why
// not a sequence per tenant: 100,000 tenants would be 100,000 relations in
// the catalog, made at run time, and sequences do not move with a tenant
// when the data is split by tenant. Why blocks: a counter row updated per
// number gets a new row version per number, which a transaction holding an
// old snapshot anywhere in the database (a long export, a backup) keeps
// from being pruned, and a row updated inside the writer's transaction
// serialises every writer of the tenant on its lock (docs/orders.md,
// "Order numbers", history). With blocks the row changes once per block.
//
// The table, created by the owning service's migration:
//
//	CREATE TABLE <schema>.counters (
//	    tenant_id  uuid   NOT NULL,
//	    name       text   NOT NULL,
//	    last_value bigint NOT NULL,  -- the last number reserved
//	    PRIMARY KEY (tenant_id, name)
//	) WITH (fillfactor = 50);        -- room on the page for HOT updates
//
// What callers get, and what they do not:
//
//   - Numbers are unique per (tenant, name), start at 1 for a new tenant
//     and are never reused.
//   - Within one Counter (one process), numbers are handed out in
//     increasing order, except that numbers given back by
//     Reservation.Release are handed out again first. Across processes
//     (replicas) each holds its own block, so numbers are not in creation
//     order: replica A may hand out 5 after replica B handed out 9.
//   - Not gapless: the rest of every block a process holds is skipped when
//     it stops or crashes, and a number taken for a write that then fails
//     is not given back. A block is at most Options.MaxBlock numbers.
//   - A tenant's first block is one number, so its first contact is 1;
//     blocks then grow with the rate at which this process takes the
//     tenant's numbers (Options.Target), and shrink back when it slows.
//
// Refills use the Counter's pool and never the caller's transaction. A
// caller that needs numbers inside a transaction (which already holds one
// of the pool's connections) reserves them before it begins
// (Counter.Reserve): waiting for a second connection while holding one
// would deadlock the pool once every connection is held by such a caller.
package counter

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options tune a Counter; the zero value is the default.
type Options struct {
	// MaxBlock is the largest block a refill reserves (default 256): the
	// most numbers a crash skips, per tenant and name, and about how far
	// a replica's numbers can lag behind another's. Take is not bound by
	// it.
	MaxBlock int64
	// Target is how long a block should last at the rate this process
	// took the key's numbers during the previous block (default 1 s): a
	// busy tenant's counter row changes about once per Target per replica.
	Target time.Duration
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
}

// maxKeys bounds the (tenant, name) entries held in memory. An entry with
// no numbers left costs nothing to drop; past the bound the least recently
// used entry is dropped even with numbers left (they are skipped: a gap).
const maxKeys = 50_000

// Counter hands out per-(tenant, name) numbers of one counter table. It is
// safe for concurrent use; one per table and process.
type Counter struct {
	pool       *pgxpool.Pool
	table      string
	reserveSQL string
	maxBlock   int64
	target     time.Duration
	now        func() time.Time

	mu   sync.Mutex
	keys map[key]*state
	lru  list.List // of *state, most recently used first

	// refills counts the statements that reserved numbers (tests).
	refills atomic.Int64
}

type key struct {
	tenant uuid.UUID
	name   string
}

// span is the numbers lo..hi, both included.
type span struct{ lo, hi int64 }

func (s span) len() int64 { return s.hi - s.lo + 1 }

// state is one key's numbers in memory.
type state struct {
	key   key
	spans []span // lowest first, disjoint
	// size and filled are the last refill's block size and time; used
	// counts the numbers taken since then. Together they give the rate.
	size   int64
	filled time.Time
	used   int64
	// wait is closed when the refill under way ends; nil when none is.
	wait chan struct{}
	elem *list.Element
}

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$`)

// New returns a Counter on table ("schema.table", a constant of the
// calling service; it is put into SQL as is, so anything else panics).
func New(pool *pgxpool.Pool, table string, opts Options) *Counter {
	if !tableName.MatchString(table) {
		panic(fmt.Sprintf("counter: table %q is not schema.table", table))
	}
	c := &Counter{pool: pool, table: table, maxBlock: opts.MaxBlock, target: opts.Target, now: opts.Now, keys: map[key]*state{}}
	if c.maxBlock <= 0 {
		c.maxBlock = 256
	}
	if c.target <= 0 {
		c.target = time.Second
	}
	if c.now == nil {
		c.now = time.Now
	}
	// One statement for a tenant's first use and every later one: the
	// row is made with the block, or moved past it.
	c.reserveSQL = `INSERT INTO ` + table + ` AS c (tenant_id, name, last_value) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, name) DO UPDATE SET last_value = c.last_value + excluded.last_value
		RETURNING last_value`
	return c
}

// ErrExhausted is returned by Reservation.Next past the numbers reserved.
var ErrExhausted = errors.New("counter: reservation exhausted")

// Next takes the tenant's next number of name: from memory, or from a
// block reserved first when this process holds none.
func (c *Counter) Next(ctx context.Context, tenant uuid.UUID, name string) (int64, error) {
	spans, err := c.take(ctx, key{tenant, name}, 1)
	if err != nil {
		return 0, err
	}
	return spans[0].lo, nil
}

// Take reserves n consecutive numbers straight from the counter row, with
// one statement whatever n, and returns the first: for bulk loads, which
// write first..first+n-1 themselves. The numbers this process holds in
// memory stay for Next.
func (c *Counter) Take(ctx context.Context, tenant uuid.UUID, name string, n int64) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("counter: take %d numbers", n)
	}
	last, err := c.reserve(ctx, key{tenant, name}, n)
	if err != nil {
		return 0, err
	}
	return last - n + 1, nil
}

// Reserve sets n of the tenant's numbers of name aside for one caller,
// refilling from the pool when this process holds fewer: for writes that
// number rows inside a transaction, which must not ask the pool for a
// second connection. Numbers the caller does not take with Next go back
// with Release.
func (c *Counter) Reserve(ctx context.Context, tenant uuid.UUID, name string, n int) (*Reservation, error) {
	r := &Reservation{c: c, key: key{tenant, name}}
	if n <= 0 {
		return r, nil
	}
	spans, err := c.take(ctx, r.key, int64(n))
	if err != nil {
		return nil, err
	}
	r.spans = spans
	return r, nil
}

// Reservation is numbers set aside by Reserve. It is for one goroutine.
type Reservation struct {
	c     *Counter
	key   key
	spans []span
	// taken is how many of the numbers Next has handed out.
	taken int64
}

// Next takes the reservation's next number, in increasing order.
func (r *Reservation) Next() (int64, error) {
	i := r.taken
	for _, s := range r.spans {
		if i < s.len() {
			r.taken++
			return s.lo + i, nil
		}
		i -= s.len()
	}
	return 0, ErrExhausted
}

// Rewind makes Next hand out the reservation's numbers again from the
// first: for a transaction that PostgreSQL rolled back (a deadlock, a
// serialization failure) and that the caller runs again, whose numbers
// were therefore never written.
func (r *Reservation) Rewind() { r.taken = 0 }

// Release gives the numbers not taken with Next back to the Counter,
// which hands them out first. Only numbers that were never written may go
// back: a number taken with Next stays taken whatever became of the write
// (a failed commit may still have committed). Release after Release does
// nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	var rest []span
	skip := r.taken
	for _, s := range r.spans {
		if skip >= s.len() {
			skip -= s.len()
			continue
		}
		rest = append(rest, span{s.lo + skip, s.hi})
		skip = 0
	}
	r.spans, r.taken = nil, 0
	if len(rest) == 0 {
		return
	}
	c := r.c
	c.mu.Lock()
	st := c.state(r.key)
	st.give(rest)
	// Not used after all: the rate of the next refill leaves them out.
	st.used = max(0, st.used-(&state{spans: rest}).count())
	c.mu.Unlock()
}

// take takes n numbers of k from memory, refilling first when fewer are
// held. One refill of a key runs at a time; the others wait for it.
func (c *Counter) take(ctx context.Context, k key, n int64) ([]span, error) {
	c.mu.Lock()
	for {
		st := c.state(k)
		if st.count() >= n {
			out := st.take(n)
			c.mu.Unlock()
			return out, nil
		}
		if w := st.wait; w != nil {
			c.mu.Unlock()
			select {
			case <-w:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			c.mu.Lock()
			continue
		}
		size := max(c.nextSize(st), n-st.count())
		w := make(chan struct{})
		st.wait = w
		c.mu.Unlock()
		last, err := c.reserve(ctx, k, size)
		c.mu.Lock()
		st.wait = nil
		close(w)
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		st.give([]span{{last - size + 1, last}})
		st.size, st.filled, st.used = size, c.now(), 0
		// Taken from st itself: if it was dropped from the map meanwhile,
		// the block is still this caller's.
		out := st.take(n)
		c.mu.Unlock()
		return out, nil
	}
}

// nextSize is the size of st's next block: enough for Target at the rate
// of the previous block, at most twice that block (a short burst does not
// jump to MaxBlock) and at least 1. A key's first block is 1.
func (c *Counter) nextSize(st *state) int64 {
	if st.size == 0 {
		return 1
	}
	grow := min(2*st.size, c.maxBlock)
	elapsed := c.now().Sub(st.filled)
	if elapsed <= 0 {
		return grow
	}
	want := int64(float64(st.used) * float64(c.target) / float64(elapsed))
	return min(max(want, 1), grow)
}

// reserve moves k's counter row n numbers on, making it when missing, and
// returns the new last value.
func (c *Counter) reserve(ctx context.Context, k key, n int64) (int64, error) {
	var last int64
	if err := c.pool.QueryRow(ctx, c.reserveSQL, k.tenant, k.name, n).Scan(&last); err != nil {
		return 0, fmt.Errorf("counter: reserve %d of %s %q: %w", n, c.table, k.name, err)
	}
	c.refills.Add(1)
	return last, nil
}

// state returns k's entry, making it, and marks it most recently used.
// The caller holds c.mu.
func (c *Counter) state(k key) *state {
	if st, ok := c.keys[k]; ok {
		c.lru.MoveToFront(st.elem)
		return st
	}
	if len(c.keys) >= maxKeys {
		c.evict()
	}
	st := &state{key: k}
	st.elem = c.lru.PushFront(st)
	c.keys[k] = st
	return st
}

// evict drops entries from the least recently used end: all those with
// nothing in hand among the oldest quarter, else the oldest one (its
// numbers are skipped). An entry being refilled stays. The caller holds
// c.mu.
func (c *Counter) evict() {
	dropped := 0
	for e, seen := c.lru.Back(), 0; e != nil && seen < maxKeys/4; seen++ {
		prev := e.Prev()
		if st := e.Value.(*state); st.wait == nil && len(st.spans) == 0 {
			c.drop(st)
			dropped++
		}
		e = prev
	}
	for e := c.lru.Back(); dropped == 0 && e != nil; e = e.Prev() {
		if st := e.Value.(*state); st.wait == nil {
			c.drop(st)
			dropped++
		}
	}
}

func (c *Counter) drop(st *state) {
	c.lru.Remove(st.elem)
	delete(c.keys, st.key)
}

// count is how many numbers st holds.
func (st *state) count() int64 {
	var n int64
	for _, s := range st.spans {
		n += s.len()
	}
	return n
}

// take removes the n lowest numbers (n <= count).
func (st *state) take(n int64) []span {
	var out []span
	st.used += n
	for n > 0 {
		s := &st.spans[0]
		if k := s.len(); k <= n {
			out = append(out, *s)
			st.spans = st.spans[1:]
			n -= k
			continue
		}
		out = append(out, span{s.lo, s.lo + n - 1})
		s.lo += n
		n = 0
	}
	return out
}

// give adds spans to st's numbers, merging neighbours, lowest first.
func (st *state) give(spans []span) {
	all := append(slices.Clone(st.spans), spans...)
	slices.SortFunc(all, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	merged := all[:0]
	for _, s := range all {
		if m := len(merged); m > 0 && merged[m-1].hi+1 == s.lo {
			merged[m-1].hi = s.hi
			continue
		}
		merged = append(merged, s)
	}
	st.spans = merged
}
