package cohorts

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Member is one member with its lifetime giving in the tenant's currency.
type Member struct {
	ContactID     int64
	DisplayName   string
	Email         string
	TotalMinor    int64
	GiftCount     int64
	FirstGiftDate *time.Time
	LastGiftDate  *time.Time
	LargestMinor  int64
}

// Sorts maps the members' sort keys to their expressions.
var Sorts = map[string]string{
	"contactId":     "c.contact_id",
	"displayName":   "c.display_name",
	"email":         "c.email",
	"totalGiven":    "coalesce(lt.net_minor, 0)",
	"giftCount":     "coalesce(lt.gift_count, 0)",
	"firstGiftDate": "lt.first_at",
	"lastGiftDate":  "lt.last_at",
	"largestGift":   "coalesce(lt.largest_minor, 0)",
}

const (
	from     = "\nFROM contacts.report_contact_cohort_v1 c\n"
	lifetime = "\nLEFT JOIN orders.report_contact_giving_v1 lt ON lt.tenant_id = $1 AND lt.contact_id = c.contact_id AND lt.currency = $2"
	// givers are the tenant's lifetime rows in its currency, the figures
	// named as the compiler's lifetime source names them (lg).
	givers = `(SELECT tenant_id, contact_id, net_minor AS net, gift_count AS cnt, largest_minor AS largest, first_at, last_at,
        recent_minor, recent_count
    FROM orders.report_contact_giving_v1 WHERE tenant_id = $1 AND currency = $2) lg`
	// giversOnly drives from them when the predicate reads no contact
	// field: c is lg's id (the lateral sub-query is flattened), and a
	// merged-away contact's rows are left out as the contacts view leaves
	// the contact (a merge moves the gifts, so there are none: a check
	// that costs a hash of the tenant's tombstones).
	giversOnly = "\nFROM " + givers + " CROSS JOIN LATERAL (SELECT lg.tenant_id, lg.contact_id) c\n"
	notMerged  = "NOT EXISTS (SELECT 1 FROM contacts.report_contact_tombstones_v1 m WHERE m.tenant_id = $1 AND m.contact_id = c.contact_id) AND "
	// giversWithContacts joins the contacts view for a predicate that
	// reads contact fields, and for the members' names.
	giversWithContacts = "\nFROM " + givers + " JOIN contacts.report_contact_cohort_v1 c ON c.tenant_id = lg.tenant_id AND c.contact_id = lg.contact_id\n"
	// holders are the contacts with a schedule, as h.
	holders            = "(SELECT DISTINCT tenant_id, contact_id FROM orders.report_schedules_v2 WHERE tenant_id = $1) h"
	holdersOnly        = "\nFROM " + holders + " CROSS JOIN LATERAL (SELECT h.tenant_id, h.contact_id) c\n"
	holdersWithContact = "\nFROM " + holders + " JOIN contacts.report_contact_cohort_v1 c ON c.tenant_id = h.tenant_id AND c.contact_id = h.contact_id\n"
	// giversLifetime is lt as lg's figures, for the members' columns.
	giversLifetime = "\nCROSS JOIN LATERAL (SELECT lg.net AS net_minor, lg.cnt AS gift_count, lg.first_at, lg.last_at, lg.largest AS largest_minor) lt"
	memberSQL      = `SELECT c.contact_id, c.display_name, coalesce(c.email, ''), coalesce(lt.net_minor, 0), coalesce(lt.gift_count, 0)::bigint,
	(lt.first_at AT TIME ZONE $3)::date, (lt.last_at AT TIME ZONE $3)::date, coalesce(lt.largest_minor, 0)`
)

// readTx is a read-only transaction with a report query's settings (as
// the reports store's): room to hash a window's aggregate, no JIT. It
// runs on the read replica when one is configured and within its lag
// bound (db.ReadPool): a cohort's members may lag by that bound.
func (s *Store) readTx(ctx context.Context) (pgx.Tx, error) {
	tx, err := s.reads.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('work_mem', '64MB', true), set_config('jit', 'off', true)`); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cohorts: begin: %w", err)
	}
	return tx, nil
}

// source is the FROM clause of q, with what its WHERE needs first; ids
// is true when only the members' ids are read (counts, id lists).
func source(q Query, ids bool) (string, string) {
	switch {
	case q.Givers && ids && !q.Contact:
		return giversOnly, notMerged
	case q.Givers:
		return giversWithContacts, ""
	case q.Holders && ids && !q.Contact:
		return holdersOnly, notMerged
	case q.Holders:
		return holdersWithContact, ""
	}
	return from, ""
}

// memberSource is source for the members' columns, with their lifetime
// figures (lt).
func memberSource(q Query) (string, string) {
	f, w := source(q, false)
	if q.Givers {
		return f + q.Joins + giversLifetime, w
	}
	return f + q.Joins + lifetime, w
}

func countSQL(q Query) string {
	f, w := source(q, true)
	return q.With + "\nSELECT count(*)" + f + q.Joins + "\nWHERE c.tenant_id = $1 AND " + w + q.Where
}

// Count counts the members of q, in a read transaction with the report
// settings: on the pool's defaults (4 MB of work_mem, JIT on) a count at
// a million contacts spilled its window aggregates to disk and paid JIT
// compilation, about twice the time (docs/performance.md, Cohorts).
func (s *Store) Count(ctx context.Context, q Query) (int64, error) {
	tx, err := s.readTx(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var n int64
	if err := tx.QueryRow(ctx, countSQL(q), q.Args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("cohorts: count: %w", err)
	}
	return n, nil
}

// Members reads one page of q's members in order (an expression of
// Sorts, with " DESC" or not), and their number.
func (s *Store) Members(ctx context.Context, q Query, order string, limit int32, offset int64) ([]Member, int64, error) {
	tx, err := s.readTx(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var total int64
	if err := tx.QueryRow(ctx, countSQL(q), q.Args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("cohorts: count: %w", err)
	}
	n := len(q.Args)
	f, w := memberSource(q)
	sql := fmt.Sprintf("%s\n%s%s\nWHERE c.tenant_id = $1 AND %s%s\nORDER BY %s NULLS LAST, c.contact_id LIMIT $%d OFFSET $%d",
		q.With, memberSQL, f, w, q.Where, order, n+1, n+2)
	rows, _ := tx.Query(ctx, sql, append(q.Args, limit, offset)...)
	out, err := pgx.CollectRows(rows, scanMember)
	if err != nil {
		return nil, 0, fmt.Errorf("cohorts: members: %w", err)
	}
	return out, total, nil
}

func scanMember(r pgx.CollectableRow) (Member, error) {
	var m Member
	err := r.Scan(&m.ContactID, &m.DisplayName, &m.Email, &m.TotalMinor, &m.GiftCount, &m.FirstGiftDate, &m.LastGiftDate, &m.LargestMinor)
	return m, err
}

// Each calls fn for every member of q in contact id order (exports).
func (s *Store) Each(ctx context.Context, q Query, fn func(Member) error) error {
	tx, err := s.readTx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	f, w := memberSource(q)
	sql := fmt.Sprintf("%s\n%s%s\nWHERE c.tenant_id = $1 AND %s%s\nORDER BY c.contact_id", q.With, memberSQL, f, w, q.Where)
	rows, err := tx.Query(ctx, sql, q.Args...)
	if err != nil {
		return fmt.Errorf("cohorts: export: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return fmt.Errorf("cohorts: export: %w", err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cohorts: export: %w", err)
	}
	return nil
}

// MemberIDs reads up to limit member ids above after, skipping offset,
// in id order, and their number when withCount.
func (s *Store) MemberIDs(ctx context.Context, q Query, after int64, offset int64, limit int32, withCount bool) ([]int64, int64, error) {
	tx, err := s.readTx(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var total int64
	if withCount {
		if err := tx.QueryRow(ctx, countSQL(q), q.Args...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("cohorts: count: %w", err)
		}
	}
	n := len(q.Args)
	f, w := source(q, true)
	sql := fmt.Sprintf("%s\nSELECT c.contact_id%s%s\nWHERE c.tenant_id = $1 AND c.contact_id > $%d AND %s%s\nORDER BY c.contact_id LIMIT $%d OFFSET $%d",
		q.With, f, q.Joins, n+1, w, q.Where, n+2, n+3)
	rows, _ := tx.Query(ctx, sql, append(q.Args, after, limit, offset)...)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, 0, fmt.Errorf("cohorts: member ids: %w", err)
	}
	return ids, total, nil
}

// AllIDs reads every member id of q in id order (the settings as Count's).
func (s *Store) AllIDs(ctx context.Context, q Query) ([]int64, error) {
	tx, err := s.readTx(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	f, w := source(q, true)
	sql := q.With + "\nSELECT c.contact_id" + f + q.Joins + "\nWHERE c.tenant_id = $1 AND " + w + q.Where + "\nORDER BY c.contact_id"
	rows, _ := tx.Query(ctx, sql, q.Args...)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("cohorts: member ids: %w", err)
	}
	return ids, nil
}
