package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Duplicates policies of an import: what a row that matches an existing
// contact (or an earlier row of its batch) does.
const (
	PolicySkip   = "skip"
	PolicyUpdate = "update"
	PolicyCreate = "create"
)

// Outcomes of an import row.
const (
	OutcomeCreated = "created"
	OutcomeUpdated = "updated"
	OutcomeSkipped = "skipped"
	OutcomeFailed  = "failed"
)

// The strong name match of an import is the same name key (NameKey:
// case and spacing ignored) at the same postal key. The check-duplicates
// endpoint lists similar names (trigram similarity from 0.5) for a person
// to judge; an import acts without one, so it takes only the same name,
// which is also one index probe per row where similarity would compare
// every contact at the postal code (migration 00005, docs/imports.md).

// ImportRow is one contact row of an import, validated and normalized by
// the service (Fields as validateContact makes them: at most one email,
// phone and address, each primary).
type ImportRow struct {
	Row int64
	Fields
}

// ImportResult is what became of one row. ContactID is 0 for a failed row,
// and for created rows (and rows matching them) of a dry run, whose ids
// were never taken.
type ImportResult struct {
	Row       int64
	Outcome   string
	ContactID int64
	Column    string
	Message   string
}

// ImportBatch is one batch of one import.
type ImportBatch struct {
	Tenant   uuid.UUID
	ImportID uuid.UUID
	Policy   string
	DryRun   bool
	// Rows are the rows to write, in file order.
	Rows []ImportRow
	// Failed are rows the service refused; they are recorded with the
	// others, so a re-sent batch answers them the same way.
	Failed []ImportResult
}

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// ImportContacts writes one batch of an import in one transaction and
// returns the result of every row of b (Rows and Failed), keyed by row
// number. A row already recorded for the import (a batch sent again) is
// answered from contacts.import_rows and not written again. docs/imports.md
// describes the matching and the policies; in short, each row is matched
// to an existing live contact (external id, then email, then phone, then
// the same name at the same postal code), else to the first earlier
// row of the batch it matches, and the policy decides. A dry run does the
// same work and rolls it back.
//
// The batch holds the tenant's import lock (importLock) for its
// transaction: batches of one tenant, and merges, take turns, so two
// batches never both create the same new contact and a merge never
// tombstones a contact a batch is updating.
func (s *Store) ImportContacts(ctx context.Context, b ImportBatch) (map[int64]ImportResult, error) {
	var out map[int64]ImportResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = importBatch(ctx, tx, b)
		if err == nil && b.DryRun {
			return errDryRun
		}
		return err
	})
	if err != nil && !errors.Is(err, errDryRun) {
		return nil, fmt.Errorf("contacts: import batch of %s: %w", b.ImportID, err)
	}
	return out, nil
}

// importLock serialises a tenant's import batches and merges (see
// ImportContacts).
func importLock(ctx context.Context, tx pgx.Tx, tenant uuid.UUID) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('contacts.import-merge:' || $1::text, 0))`, tenant); err != nil {
		return fmt.Errorf("take the tenant's import lock: %w", err)
	}
	return nil
}

func importBatch(ctx context.Context, tx pgx.Tx, b ImportBatch) (map[int64]ImportResult, error) {
	if err := importLock(ctx, tx, b.Tenant); err != nil {
		return nil, err
	}
	// Plans for a tenant an import is filling: it grows faster than
	// autovacuum analyzes it, and with its statistics saying "a few
	// hundred rows" the planner hashes the whole tenant to join a batch
	// (the matching, the UPDATEs of updated contacts: seen growing from
	// 0.1 s to 0.9 s a batch by 150,000 contacts). Without hash and merge
	// joins every join of the batch's 5,000 rows is an index probe, which
	// costs the same at any size. JIT is off too: the probes are cheap but
	// their estimates pass its threshold, and compiling costs seconds.
	if _, err := tx.Exec(ctx, `SELECT set_config('jit', 'off', true), set_config('enable_hashjoin', 'off', true),
		set_config('enable_mergejoin', 'off', true)`); err != nil {
		return nil, fmt.Errorf("set the batch's planner options: %w", err)
	}
	out, err := priorResults(ctx, tx, b)
	if err != nil {
		return nil, err
	}
	var todo []ImportRow
	for _, r := range b.Rows {
		if _, done := out[r.Row]; !done {
			todo = append(todo, r)
		}
	}
	var fresh []ImportResult
	for _, f := range b.Failed {
		if _, done := out[f.Row]; !done {
			fresh = append(fresh, f)
		}
	}
	if len(todo) > 0 {
		results, err := writeRowsOfBatch(ctx, tx, b, todo)
		if err != nil {
			return nil, err
		}
		fresh = append(fresh, results...)
	}
	if err := recordResults(ctx, tx, b, fresh); err != nil {
		return nil, err
	}
	for _, r := range fresh {
		if r.ContactID < 0 {
			r.ContactID = 0
		}
		out[r.Row] = r
	}
	return out, nil
}

// priorResults reads the rows of b already recorded for the import.
func priorResults(ctx context.Context, tx pgx.Tx, b ImportBatch) (map[int64]ImportResult, error) {
	// A batch is a run of consecutive rows (less the ones the imports
	// service refused itself): one range scan of the primary key reads
	// them, where row = ANY(5,000 numbers) would test every row of the
	// import against the list.
	in := make(map[int64]bool, len(b.Rows)+len(b.Failed))
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, rs := range [][]int64{rowNumbers(b.Rows), failedNumbers(b.Failed)} {
		for _, n := range rs {
			in[n], lo, hi = true, min(lo, n), max(hi, n)
		}
	}
	out := make(map[int64]ImportResult, len(in))
	if len(in) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT row, outcome, coalesce(contact_id, 0), coalesce(column_name, ''), coalesce(message, '')
		FROM contacts.import_rows WHERE tenant_id = $1 AND import_id = $2 AND row BETWEEN $3 AND $4`, b.Tenant, b.ImportID, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("read recorded rows: %w", err)
	}
	var r ImportResult
	if _, err := pgx.ForEachRow(rows, []any{&r.Row, &r.Outcome, &r.ContactID, &r.Column, &r.Message}, func() error {
		if in[r.Row] {
			out[r.Row] = r
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read recorded rows: %w", err)
	}
	return out, nil
}

func rowNumbers(rows []ImportRow) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out
}

func failedNumbers(rows []ImportResult) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out
}

// recordResults writes the answers of the rows done by this batch.
func recordResults(ctx context.Context, tx pgx.Tx, b ImportBatch, results []ImportResult) error {
	if len(results) == 0 {
		return nil
	}
	tid, iid := pgUUID(b.Tenant), pgUUID(b.ImportID)
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts", "import_rows"},
		[]string{"tenant_id", "import_id", "row", "outcome", "contact_id", "column_name", "message"},
		pgx.CopyFromSlice(len(results), func(i int) ([]any, error) {
			r := results[i]
			var cid *int64
			if r.ContactID != 0 {
				cid = &r.ContactID
			}
			return []any{tid, iid, r.Row, r.Outcome, cid, nullable(r.Column), nullable(r.Message)}, nil
		}))
	if err != nil {
		return fmt.Errorf("record row results: %w", err)
	}
	return nil
}

// pgUUID encodes straight to binary in COPY (uuid.UUID would go through
// its text form on every row).
func pgUUID(u uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: u, Valid: true} }

// rowKeys are what matching compares of a row, normalized.
type rowKeys struct {
	external, email, phone, postal, name string
}

func keysOf(f Fields) rowKeys {
	k := rowKeys{external: f.ExternalID, name: NameKey(f)}
	if len(f.Emails) > 0 {
		k.email = f.Emails[0].Key
	}
	if len(f.Phones) > 0 {
		k.phone = f.Phones[0].Key
	}
	if len(f.Addresses) > 0 {
		k.postal = f.Addresses[0].PostalKey
	}
	return k
}

// rowMatch is a row's duplicate: an existing contact (contact > 0) or an
// earlier row of the batch (earlier ≥ 0), and whether by external id.
type rowMatch struct {
	contact    int64
	earlier    int
	byExternal bool
}

// stagedKeys are the rows' keys as the arrays existingMatchSQL unnests
// ($2 to $7): ord, then the external id, email, phone and postal keys
// (NULL when empty) and the name key. The keys travel with the query
// instead of through a temporary table: no catalog rows to make and drop
// per batch, no COPY round trip, no statistics to gather (the lookups
// are LATERAL probes, which no statistics turn into scans).
func stagedKeys(rows []ImportRow) []any {
	ord := make([]int32, len(rows))
	ext, email, phone, postal := make([]*string, len(rows)), make([]*string, len(rows)), make([]*string, len(rows)), make([]*string, len(rows))
	name := make([]string, len(rows))
	for i, r := range rows {
		k := keysOf(r.Fields)
		ord[i], ext[i], email[i], phone[i], postal[i], name[i] = int32(i), nullable(k.external), nullable(k.email), nullable(k.phone), nullable(k.postal), k.name
	}
	return []any{ord, ext, email, phone, postal, name}
}

// existingMatchSQL finds each staged row's best live contact: by external
// id, else email, else phone, else the same name at its postal code; ties
// to the lowest id. An external id of a tombstone leads
// to its survivor (merges keep chains one hop long).
//
// Every lookup is a LATERAL probe of an index with the row's key: a
// tenant that an import is filling grows faster than autovacuum analyzes
// it, and with its statistics saying "a few hundred rows" the planner
// would hash the whole tenant instead (seen: 0.9 s a batch at 150,000
// contacts, and growing). Probes cost about the same at any size. The LIMITs
// (and OFFSET 0) keep PostgreSQL from flattening the probes back into
// joins; they also cap one very common value (a shared office address, a
// crowded postal code), as the check-duplicates query does.
const existingMatchSQL = `
	WITH import_stage AS MATERIALIZED (
		SELECT * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
			AS u(ord, external_id, email_key, phone_key, postal_key, name_key)
	)
	SELECT DISTINCT ON (m.ord) m.ord, l.live, m.pri = 1
	FROM (
		SELECT s.ord, x.id, 1 AS pri, 1::float8 AS sim FROM import_stage s
		CROSS JOIN LATERAL (SELECT id FROM contacts.contacts WHERE tenant_id = $1 AND external_id = s.external_id LIMIT 50) x
		WHERE s.external_id IS NOT NULL
		UNION ALL
		SELECT s.ord, e.contact_id, 2, 1 FROM import_stage s
		CROSS JOIN LATERAL (SELECT contact_id FROM contacts.contact_emails WHERE tenant_id = $1 AND email_key = s.email_key LIMIT 50) e
		WHERE s.email_key IS NOT NULL
		UNION ALL
		SELECT s.ord, p.contact_id, 3, 1 FROM import_stage s
		CROSS JOIN LATERAL (SELECT contact_id FROM contacts.contact_phones WHERE tenant_id = $1 AND phone_key = s.phone_key LIMIT 50) p
		WHERE s.phone_key IS NOT NULL
		UNION ALL
		SELECT s.ord, a.contact_id, 4, 1 FROM import_stage s
		CROSS JOIN LATERAL (SELECT contact_id FROM contacts.contact_addresses
			WHERE tenant_id = $1 AND postal_key = s.postal_key AND name_key = s.name_key LIMIT 50) a
		WHERE s.postal_key IS NOT NULL AND s.name_key <> ''
	) m
	CROSS JOIN LATERAL (SELECT coalesce(merged_into, id) AS live FROM contacts.contacts WHERE tenant_id = $1 AND id = m.id OFFSET 0) l
	ORDER BY m.ord, m.pri, m.sim DESC, m.id`

// batchMatches finds, for each row, the first earlier row of the batch it
// matches by the same rules (external id, email, phone, the same name at
// the same postal code), and the first by external id, and records it in
// out where the rules let an earlier row win: an existing contact wins
// over an earlier row, unless the earlier row has the external id and the
// contact does not. The keys are in memory already; in SQL, over the
// staged keys, this was four window sorts, about 65 ms a batch.
func batchMatches(rows []ImportRow, out []*rowMatch) {
	var first [4]map[string]int
	for j := range first {
		first[j] = make(map[string]int, len(rows))
	}
	for i, r := range rows {
		k := keysOf(r.Fields)
		keys := [4]string{k.external, k.email, k.phone, ""}
		if k.postal != "" && k.name != "" {
			keys[3] = k.postal + "\x00" + k.name
		}
		firstExt, firstAny := -1, -1
		for j, key := range keys {
			if key == "" {
				continue
			}
			f, seen := first[j][key]
			if !seen {
				first[j][key] = i
				continue
			}
			if j == 0 {
				firstExt = f
			}
			if firstAny < 0 || f < firstAny {
				firstAny = f
			}
		}
		switch {
		case firstAny < 0:
		case out[i] != nil && (out[i].byExternal || firstExt < 0):
		case firstExt >= 0:
			out[i] = &rowMatch{earlier: firstExt, byExternal: true}
		case out[i] == nil:
			out[i] = &rowMatch{earlier: firstAny}
		}
	}
}

// findMatches returns each row's match, if it has one (indexed by the
// row's position in rows).
func findMatches(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, rows []ImportRow) ([]*rowMatch, error) {
	out := make([]*rowMatch, len(rows))
	existing, err := tx.Query(ctx, existingMatchSQL, append([]any{tenant}, stagedKeys(rows)...)...)
	if err != nil {
		return nil, fmt.Errorf("match existing contacts: %w", err)
	}
	var (
		ord   int32
		id    int64
		byExt bool
	)
	if _, err := pgx.ForEachRow(existing, []any{&ord, &id, &byExt}, func() error {
		out[ord] = &rowMatch{contact: id, earlier: -1, byExternal: byExt}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("match existing contacts: %w", err)
	}
	batchMatches(rows, out)
	return out, nil
}

// plan is what the batch writes: new contacts (from their first row, with
// later rows folded in under the update policy), updates of existing
// contacts, and the outcome of every row.
type plan struct {
	creates []*Fields
	// createOf maps a row's position to its index in creates (-1: none).
	createOf []int
	// updates are the rows to fold into each existing contact, in order.
	updates     map[int64][]Fields
	updateOrder []int64
	// results are per row; ContactID of a row on a new contact is
	// -(index in creates + 1) until ids are taken.
	results []ImportResult
}

// decide applies the policy to the matches, row by row in file order: a
// row matching an earlier row is treated as matching whatever that row
// became.
func decide(policy string, rows []ImportRow, matches []*rowMatch) *plan {
	p := &plan{createOf: make([]int, len(rows)), updates: map[int64][]Fields{}, results: make([]ImportResult, len(rows))}
	for i, r := range rows {
		p.createOf[i] = -1
		m := matches[i]
		if policy == PolicyCreate && m != nil && !m.byExternal {
			m = nil
		}
		target := int64(0)
		if m != nil {
			target = m.contact
			if m.earlier >= 0 {
				target = p.results[m.earlier].ContactID
				if c := p.createOf[m.earlier]; c >= 0 {
					p.createOf[i] = c
				}
			}
		}
		res := ImportResult{Row: r.Row}
		switch {
		case target == 0:
			p.creates = append(p.creates, new(r.Fields))
			p.createOf[i] = len(p.creates) - 1
			res.Outcome, res.ContactID = OutcomeCreated, -int64(len(p.creates))
		case policy == PolicyUpdate:
			res.Outcome, res.ContactID = OutcomeUpdated, target
			if c := p.createOf[i]; c >= 0 {
				foldInto(p.creates[c], r.Fields, nil)
			} else {
				if _, ok := p.updates[target]; !ok {
					p.updateOrder = append(p.updateOrder, target)
				}
				p.updates[target] = append(p.updates[target], r.Fields)
			}
		default:
			res.Outcome, res.ContactID = OutcomeSkipped, target
		}
		p.results[i] = res
	}
	return p
}

// existingKeys are the normalized keys of an existing contact's rows, to
// add only what it lacks.
type existingKeys struct {
	emails, phones, addresses map[string]bool
}

// foldInto applies an update row to f: non-empty names replace, the
// external id fills an empty one, tags are added (case ignored), and the
// email, phone and address are added when f has none with the same key.
// The contact type never changes. It reports whether f changed.
func foldInto(f *Fields, row Fields, have *existingKeys) bool {
	changed := false
	set := func(dst *string, v string) {
		if v != "" && *dst != v {
			*dst, changed = v, true
		}
	}
	set(&f.FirstName, row.FirstName)
	set(&f.LastName, row.LastName)
	set(&f.OrganizationName, row.OrganizationName)
	if f.ExternalID == "" && row.ExternalID != "" {
		f.ExternalID, changed = row.ExternalID, true
	}
	for _, t := range row.Tags {
		if !slices.ContainsFunc(f.Tags, func(x string) bool { return strings.EqualFold(x, t) }) {
			f.Tags, changed = append(f.Tags, t), true
		}
	}
	if have == nil {
		have = keysOfFields(f)
	}
	for _, e := range row.Emails {
		if !have.emails[e.Key] {
			e.IsPrimary = len(have.emails) == 0
			f.Emails, have.emails[e.Key], changed = append(f.Emails, e), true, true
		}
	}
	for _, ph := range row.Phones {
		if !have.phones[ph.Key] {
			ph.IsPrimary = len(have.phones) == 0
			f.Phones, have.phones[ph.Key], changed = append(f.Phones, ph), true, true
		}
	}
	for _, a := range row.Addresses {
		if k := addressKey(a); !have.addresses[k] {
			a.IsPrimary = len(have.addresses) == 0
			f.Addresses, have.addresses[k], changed = append(f.Addresses, a), true, true
		}
	}
	return changed
}

func keysOfFields(f *Fields) *existingKeys {
	k := &existingKeys{emails: map[string]bool{}, phones: map[string]bool{}, addresses: map[string]bool{}}
	for _, e := range f.Emails {
		k.emails[e.Key] = true
	}
	for _, p := range f.Phones {
		k.phones[p.Key] = true
	}
	for _, a := range f.Addresses {
		k.addresses[addressKey(a)] = true
	}
	return k
}

// writeRowsOfBatch matches, decides and writes the rows not yet recorded,
// and returns their results.
func writeRowsOfBatch(ctx context.Context, tx pgx.Tx, b ImportBatch, rows []ImportRow) ([]ImportResult, error) {
	matches, err := findMatches(ctx, tx, b.Tenant, rows)
	if err != nil {
		return nil, err
	}
	p := decide(b.Policy, rows, matches)
	upd, err := planUpdates(ctx, tx, b.Tenant, p)
	if err != nil {
		return nil, err
	}
	w := &bulkWrite{tenant: pgUUID(b.Tenant), importID: pgUUID(b.ImportID)}
	if err := w.takeIDs(ctx, tx, b.Tenant, p, upd); err != nil {
		return nil, err
	}
	if err := w.insertContacts(ctx, tx, p); err != nil {
		return nil, err
	}
	if err := applyUpdates(ctx, tx, b.Tenant, upd); err != nil {
		return nil, err
	}
	if err := w.insertRows(ctx, tx); err != nil {
		return nil, err
	}
	if b.DryRun {
		// The ids were taken in a transaction that is rolled back: they
		// name nothing, so the answer leaves them out (importBatch).
		return p.results, nil
	}
	for i := range p.results {
		if id := p.results[i].ContactID; id < 0 {
			p.results[i].ContactID = w.contactIDs[-id-1]
		}
	}
	return p.results, nil
}
