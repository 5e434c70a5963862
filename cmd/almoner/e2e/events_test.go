package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/cmd/almoner/apptest"
	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/secretbox"
)

func evPath(tenantID string, rest ...string) string {
	return "/api/tenants/" + tenantID + "/events" + strings.Join(rest, "")
}

// feedPage is one page of the event feed, items kept as they came.
type feedPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"nextCursor"`
	HasMore    bool              `json:"hasMore"`
}

// feedEvent is the part of an item the tests read.
type feedEvent struct {
	ID    string `json:"id"`
	Event string `json:"event"`
	Data  struct {
		EntityType string `json:"entity_type"`
		EntityID   string `json:"entity_id"`
	} `json:"data"`
}

func (p feedPage) events(t *testing.T) []feedEvent {
	t.Helper()
	out := make([]feedEvent, len(p.Items))
	for i, raw := range p.Items {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatalf("item %s: %v", raw, err)
		}
	}
	return out
}

// readFeed reads one page of the feed with query (without "?").
func readFeed(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, query string) feedPage {
	t.Helper()
	var p feedPage
	c.Do(t, "GET", evPath(tn.ID, "?"+query), tn.Key, nil).Expect(t, http.StatusOK).JSON(t, &p)
	return p
}

// feedMark is a cursor the feed handed out and how many events came
// before it.
type feedMark struct {
	cursor string
	at     int
}

// followFeed reads pages of `limit` (and filter) from after until it has seen want
// events or the deadline passes, and returns the event ids in feed order
// and the cursor of every page with its place.
func followFeed(t *testing.T, c *apptest.Cluster, tn apptest.Tenant, filter url.Values, after string, limit, want int, within time.Duration) (ids []string, marks []feedMark) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(ids) < want {
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		for k, v := range filter {
			q[k] = v
		}
		if after != "" {
			q.Set("after", after)
		}
		p := readFeed(t, c, tn, q.Encode())
		if p.NextCursor == "" {
			t.Fatal("a page without nextCursor")
		}
		if len(p.Items) > limit || (p.HasMore && len(p.Items) != limit) {
			t.Fatalf("page of %d items with hasMore %v, limit %d", len(p.Items), p.HasMore, limit)
		}
		for _, e := range p.events(t) {
			ids = append(ids, e.ID)
		}
		after = p.NextCursor
		marks = append(marks, feedMark{after, len(ids)})
		if !p.HasMore && len(ids) < want {
			if time.Now().After(deadline) {
				t.Fatalf("feed has %d events after %s, want %d", len(ids), within, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return ids, marks
}

// TestEventFeedConcurrentWriters: eight writers hold transactions open for
// random times, so rows commit out of their id order, while a reader
// follows the feed in pages of 7. Every committed event is read exactly
// once; the feed read again from the start, and from every cursor the
// reader was given, returns the same events in the same order. The tenant
// has no webhooks:enabled: the feed does not need it.
func TestEventFeedConcurrentWriters(t *testing.T) {
	t.Parallel()
	c := apptest.Start(t, apptest.Options{})
	tn := c.NewTenant(t, "api-access:enabled")
	const writers, txPerWriter, rowsPerTx = 8, 10, 3

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- writeSlowly(c.DatabaseURL, tn.ID, w, txPerWriter, rowsPerTx)
		}()
	}
	// The reader follows while the writers write (the writers' rows only:
	// the tenant's creation and its key are events too).
	contacts := url.Values{"entityType": {"Contact"}}
	ids, marks := followFeed(t, c, tn, contacts, "", 7, writers*txPerWriter*rowsPerTx, 60*time.Second)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := tenantEventIDs(t, c.DatabaseURL, tn.ID, "Contact")
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("event %s read twice", id)
		}
		seen[id] = true
	}
	for _, id := range want {
		if !seen[id] {
			t.Errorf("committed event %s never read", id)
		}
	}
	if len(ids) != len(want) {
		t.Errorf("read %d events, %d committed", len(ids), len(want))
	}

	// Stable: the same events in the same order from the start (pages of
	// 50) and from each cursor handed out (the rest of the first read).
	again, _ := followFeed(t, c, tn, contacts, "", 50, len(ids), 10*time.Second)
	if strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Errorf("the feed read again differs:\nfirst %v\nagain %v", ids, again)
	}
	for i, m := range marks {
		if i%5 != 2 || m.at == len(ids) {
			continue // a few cursors are enough
		}
		from, _ := followFeed(t, c, tn, contacts, m.cursor, 50, len(ids)-m.at, 5*time.Second)
		if strings.Join(from, ",") != strings.Join(ids[m.at:], ",") {
			t.Errorf("from the cursor after %d events: %v, first read had %v", m.at, from, ids[m.at:])
		}
	}
	// Caught up: the last cursor has nothing more, and says so.
	last := readFeed(t, c, tn, "entityType=Contact&after="+marks[len(marks)-1].cursor)
	if len(last.Items) != 0 || last.HasMore {
		t.Errorf("after the last cursor: %d items, hasMore %v", len(last.Items), last.HasMore)
	}
}

// writeSlowly writes n transactions of k audit rows each, holding each
// open for a random time, so that its commits interleave out of id order
// with the other writers'.
func writeSlowly(dbURL, tenantID string, writer, n, k int) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for i := range n {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		for j := range k {
			if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenantID, EntityType: "Contact", EntityID: fmt.Sprintf("w%d-%d-%d", writer, i, j),
				Action: audit.Created, Actor: "system"}); err != nil {
				return err
			}
			time.Sleep(time.Duration(rand.IntN(15)) * time.Millisecond)
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// tenantEventIDs lists the tenant's committed event ids of an entity type.
func tenantEventIDs(t *testing.T, dbURL, tenantID, entityType string) []string {
	t.Helper()
	rows, err := dbConn(t, dbURL).Query(context.Background(), `SELECT event_id::text FROM audit.events WHERE tenant_id = $1 AND entity_type = $2 ORDER BY id`,
		tenantID, entityType)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// cursorPurpose is the HKDF info of the feed's cursor key (docs/events.md).
const cursorPurpose = "almoner event-feed cursor v2"

// signCursor signs a feed cursor payload for a tenant as the webhooks
// service does, written here from docs/events.md: base64url of
// HMAC-SHA256(HKDF-SHA256(sealing key, info cursorPurpose), tenant id,
// NUL, payload) followed by the payload.
func signCursor(t *testing.T, sealing, tenantID, payload string) string {
	t.Helper()
	master, err := secretbox.ParseKey(sealing)
	if err != nil {
		t.Fatal(err)
	}
	key, err := secretbox.DeriveKey(master, cursorPurpose, sha256.Size)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(tenantID + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(append(m.Sum(nil), payload...))
}

// cursorPayload is the payload of a feed cursor, "2:<xid>:<id>:<issued>".
func cursorPayload(t *testing.T, cursor string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) <= sha256.Size {
		t.Fatalf("cursor %q: %v", cursor, err)
	}
	return string(raw[sha256.Size:])
}

// forgeIssued returns cursor with its issue time moved to at, signed
// again with the deployment's sealing key: what a replica whose clock
// said `at` would have issued.
func forgeIssued(t *testing.T, sealing, tenantID, cursor string, at time.Time) string {
	t.Helper()
	parts := strings.Split(cursorPayload(t, cursor), ":")
	if len(parts) != 4 || parts[0] != "2" {
		t.Fatalf("cursor payload %q", parts)
	}
	parts[3] = fmt.Sprint(at.Unix())
	return signCursor(t, sealing, tenantID, strings.Join(parts, ":"))
}

// TestEventFeedAPI: filters, one event, the retention start and 410,
// validation, scope and another tenant.
func TestEventFeedAPI(t *testing.T) {
	t.Parallel()
	// The sealing key is the test's, so it can sign cursors as a replica.
	sealing := secretbox.NewKey()
	c := apptest.Start(t, apptest.Options{Settings: map[string]string{secretbox.KeyVar: sealing}})
	tn := c.NewTenant(t, "api-access:enabled")
	other := c.NewTenant(t, "api-access:enabled")

	// The tenant's rows so far (its creation, its key) and one more
	// contact made 40 days old: outside retention, written before the rest.
	writeAudit(t, c.DatabaseURL, tn.ID, audit.Entry{EntityType: "Contact", EntityID: "old", Action: audit.Created, Actor: "system"})
	age(t, c.DatabaseURL, tn.ID, 40*24*time.Hour)
	writeAudit(t, c.DatabaseURL, tn.ID,
		audit.Entry{EntityType: "Contact", EntityID: "1", Action: audit.Created, Actor: "system"},
		audit.Entry{EntityType: "Contact", EntityID: "1", Action: audit.Updated, Actor: "system", Changes: map[string]audit.Change{"firstName": {Old: "a", New: "b"}}},
		audit.Entry{EntityType: "Contact", EntityID: "2", Action: audit.Created, Actor: "system"},
		audit.Entry{EntityType: "Fund", EntityID: "7", Action: audit.Created, Actor: "system"},
		// Outside the webhook catalog, in the feed and its filter all the same.
		audit.Entry{EntityType: "Report", EntityID: "3", Action: audit.Updated, Actor: "system"},
	)
	writeAudit(t, c.DatabaseURL, other.ID, audit.Entry{EntityType: "Contact", EntityID: "1", Action: audit.Created, Actor: "system"})
	// The start is never past the oldest transaction running on the
	// server (docs/events.md): while another test holds one that began
	// before the old row, the feed starts before it too. Once none does,
	// the feed starts after it.
	want := append(tenantEventIDs(t, c.DatabaseURL, tn.ID, "Contact")[1:], tenantEventIDs(t, c.DatabaseURL, tn.ID, "Fund")...)
	want = append(want, tenantEventIDs(t, c.DatabaseURL, tn.ID, "Report")...)
	var all []string
	for deadline := time.Now().Add(deliveryWait); ; time.Sleep(50 * time.Millisecond) {
		all, _ = followFeed(t, c, tn, nil, "", 100, 4, deliveryWait)
		if strings.Join(all, ",") == strings.Join(want, ",") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("feed from the start = %v: want the 5 rows within retention, %v", all, want)
		}
	}

	filters := []struct {
		query string
		want  []string // event: entity id
	}{
		{"types=contact.created", []string{"contact.created:1", "contact.created:2"}},
		{"types=contact.updated,fund.created", []string{"contact.updated:1", "fund.created:7"}},
		{"entityType=Contact&entityId=1", []string{"contact.created:1", "contact.updated:1"}},
		{"entityType=Fund", []string{"fund.created:7"}},
		{"entityType=Contact&types=contact.created", []string{"contact.created:1", "contact.created:2"}},
		// The document types the filter by shape (FeedEventType), not as
		// the subscribable EventTypeName: the contract checker refuses an
		// accepted report.updated otherwise.
		{"types=report.updated", []string{"report.updated:3"}},
	}
	for _, f := range filters {
		p := readFeed(t, c, tn, f.query)
		var got []string
		for _, e := range p.events(t) {
			got = append(got, e.Event+":"+e.Data.EntityID)
		}
		if strings.Join(got, ",") != strings.Join(f.want, ",") || p.HasMore {
			t.Errorf("%s: %v (hasMore %v), want %v", f.query, got, p.HasMore, f.want)
		}
	}
	// hasMore is exact: a page of exactly what is left says false.
	four := "types=contact.created,contact.updated,fund.created"
	if p := readFeed(t, c, tn, four+"&limit=3"); len(p.Items) != 3 || !p.HasMore {
		t.Errorf("limit 3 of 4: %d items, hasMore %v", len(p.Items), p.HasMore)
	} else if q := readFeed(t, c, tn, four+"&limit=1&after="+p.NextCursor); len(q.Items) != 1 || q.HasMore {
		t.Errorf("the last one: %d items, hasMore %v", len(q.Items), q.HasMore)
	}

	// One event, as the feed shows it.
	first := readFeed(t, c, tn, "limit=1")
	one := c.Do(t, "GET", evPath(tn.ID, "/", all[0]), tn.Key, nil).Expect(t, http.StatusOK)
	if !bytes.Equal(one.Body, first.Items[0]) {
		t.Errorf("GET one = %s, feed item %s", one.Body, first.Items[0])
	}

	// A cursor issued before the retention: 410 Events.CursorExpired.
	expired := forgeIssued(t, sealing, tn.ID, first.NextCursor, time.Now().Add(-31*24*time.Hour))
	gone := c.Do(t, "GET", evPath(tn.ID, "?after="+expired), tn.Key, nil).Expect(t, http.StatusGone)
	var p invProblem
	gone.JSON(t, &p)
	if p.Status != 410 || !strings.HasSuffix(p.Type, "/gone") || len(p.Errors[""]) != 1 || !strings.HasPrefix(p.Errors[""][0], "Events.CursorExpired: ") ||
		gone.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("expired cursor: %s", gone.Body)
	}
	// One issued 29 days ago still reads.
	c.Do(t, "GET", evPath(tn.ID, "?after="+forgeIssued(t, sealing, tn.ID, first.NextCursor, time.Now().Add(-29*24*time.Hour))), tn.Key, nil).Expect(t, http.StatusOK)
	checkForgedCursors(t, c, tn, other, first.NextCursor)

	// Bad input: 400 under the property path.
	for _, bc := range []struct{ query, field string }{
		{"limit=0", "Limit"}, {"limit=1001", "Limit"}, {"limit=x", "Limit"},
		{"after=not-a-cursor", "After"},
		{"types=contact.created,contact.exploded", "Types[1]"}, {"entityId=1", "EntityId"}, {"colour=red", "Colour"},
	} {
		var p invProblem
		c.Do(t, "GET", evPath(tn.ID, "?"+bc.query), tn.Key, nil).Expect(t, http.StatusBadRequest).JSON(t, &p)
		if len(p.Errors[bc.field]) == 0 {
			t.Errorf("%s: errors %v, want key %s", bc.query, p.Errors, bc.field)
		}
	}

	// Scope: events:view, for the list and for one event.
	nobody := c.NewKey(t, tn.ID, "webhooks:view", "audit-logs:view")
	viewer := c.NewKey(t, tn.ID, "events:view")
	for _, path := range []string{evPath(tn.ID), evPath(tn.ID, "/", all[0])} {
		r := c.Do(t, "GET", path, nobody, nil).Expect(t, http.StatusForbidden)
		if !strings.Contains(string(r.Body), "Missing required permission: events:view") {
			t.Errorf("%s without the scope: %s", path, r.Body)
		}
		c.Do(t, "GET", path, viewer, nil).Expect(t, http.StatusOK)
	}

	// Another tenant's event, an unknown one, an id that does not parse:
	// 404; another tenant's path: 404.
	otherIDs := tenantEventIDs(t, c.DatabaseURL, other.ID, "Contact")
	for _, id := range []string{otherIDs[0], "0190a4d6-0000-7000-8000-000000000000", "nope"} {
		c.Do(t, "GET", evPath(tn.ID, "/", id), tn.Key, nil).Expect(t, http.StatusNotFound)
	}
	c.Do(t, "GET", evPath(other.ID), tn.Key, nil).Expect(t, http.StatusNotFound)
	c.Do(t, "GET", evPath(other.ID, "/", otherIDs[0]), tn.Key, nil).Expect(t, http.StatusNotFound)
	// The other tenant's feed has its one event only.
	if got, _ := followFeed(t, c, other, url.Values{"entityType": {"Contact"}}, "", 100, 1, 10*time.Second); len(got) != 1 || got[0] != otherIDs[0] {
		t.Errorf("other tenant's feed = %v", got)
	}
}

// checkForgedCursors: a cursor the feed did not issue to the tenant is a
// 400 Events.InvalidCursor under After, and the real one still reads. An
// unsigned 1:0:0:<now> (the cursor of before) would start at the tenant's
// first event, 40 days old, beyond the retention; one issued 31 years
// ahead would never expire; another tenant's would read from its place.
func checkForgedCursors(t *testing.T, c *apptest.Cluster, tn, other apptest.Tenant, real string) {
	t.Helper()
	now := fmt.Sprint(time.Now().Unix())
	future := fmt.Sprint(time.Now().AddDate(31, 0, 0).Unix())
	payload := cursorPayload(t, real)
	raw, _ := base64.RawURLEncoding.DecodeString(real)
	raw[len(raw)-1] ^= 1 // the issue time's last digit
	var otherPage feedPage
	c.Do(t, "GET", evPath(other.ID, "?limit=1"), other.Key, nil).Expect(t, http.StatusOK).JSON(t, &otherPage)
	for _, bc := range []struct{ name, cursor string }{
		{"unsigned 1:0:0:now", base64.RawURLEncoding.EncodeToString([]byte("1:0:0:" + now))},
		{"unsigned 2:0:0:now", base64.RawURLEncoding.EncodeToString([]byte("2:0:0:" + now))},
		{"one byte changed", base64.RawURLEncoding.EncodeToString(raw)},
		{"issued 31 years ahead, MAC kept", keepMAC(t, real, strings.Join(append(strings.Split(payload, ":")[:3], future), ":"))},
		{"another tenant's", otherPage.NextCursor},
	} {
		var p invProblem
		r := c.Do(t, "GET", evPath(tn.ID, "?after="+bc.cursor), tn.Key, nil)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bc.name, r.Status, r.Body)
			continue
		}
		r.JSON(t, &p)
		if len(p.Errors["After"]) != 1 || !strings.HasPrefix(p.Errors["After"][0], "Events.InvalidCursor: ") {
			t.Errorf("%s: errors %v, want Events.InvalidCursor under After", bc.name, p.Errors)
		}
	}
	c.Do(t, "GET", evPath(tn.ID, "?after="+real), tn.Key, nil).Expect(t, http.StatusOK)
}

// keepMAC returns cursor with its MAC kept and its payload replaced.
func keepMAC(t *testing.T, cursor, payload string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(append(raw[:sha256.Size:sha256.Size], payload...))
}

// age moves every audit row of the tenant so far back by d, as if written
// d ago.
func age(t *testing.T, dbURL, tenantID string, d time.Duration) {
	t.Helper()
	if _, err := dbConn(t, dbURL).Exec(context.Background(), `UPDATE audit.events SET occurred_at = occurred_at - $2::bigint * interval '1 second'
		WHERE tenant_id = $1`, tenantID, int64(d.Seconds())); err != nil {
		t.Fatal(err)
	}
}

// TestEventFeedItemIsTheWebhookBody: for the same events, the feed item
// and the delivered body are the same bytes, changes included.
func TestEventFeedItemIsTheWebhookBody(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	c := apptest.Start(t, apptest.Options{Settings: devSettings(caFile(t, rc))})
	tn := c.NewTenant(t, "api-access:enabled", "webhooks:enabled")
	createWebhook(t, c, tn, rc.srv.URL+"/hook", "contact.created", "contact.updated")
	writeAudit(t, c.DatabaseURL, tn.ID,
		audit.Entry{EntityType: "Contact", EntityID: "42", Action: audit.Created, Actor: "api-key:ak_test_abc"},
		audit.Entry{EntityType: "Contact", EntityID: "42", Action: audit.Updated, Actor: "system", Changes: map[string]audit.Change{
			"firstName": {Old: "Ada <x> & \"y\"", New: "Grace"}, "amount": {Old: 10.5, New: 12}, "tags": {Old: []string{"a"}, New: nil}}},
	)
	got := rc.waitFor(t, 2)
	bodies := map[string][]byte{}
	for _, g := range got {
		var e feedEvent
		if err := json.Unmarshal(g.body, &e); err != nil {
			t.Fatal(err)
		}
		bodies[e.ID] = g.body
	}
	p := readFeed(t, c, tn, "types=contact.created,contact.updated")
	if len(p.Items) != 2 {
		t.Fatalf("feed = %d items", len(p.Items))
	}
	for i, item := range p.Items {
		var e feedEvent
		if err := json.Unmarshal(item, &e); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(item, bodies[e.ID]) {
			t.Errorf("item %d:\nfeed      %s\ndelivered %s", i, item, bodies[e.ID])
		}
	}
}
