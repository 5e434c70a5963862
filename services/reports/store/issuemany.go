package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Issue is one document to record with IssueMany: its subject and the
// hash of its figures.
type Issue struct {
	Subject string
	Hash    []byte
}

// IssueMany records many documents of one kind as Issue records one, in
// one transaction and a few statements (a year-end run issues a batch of
// statements at a time): the first issues take consecutive numbers under
// the counter's lock, changed figures a new revision, and their audit rows
// go in one insert. The answer is in the order of docs.
func (s *Store) IssueMany(ctx context.Context, tenantID uuid.UUID, kind string, docs []Issue, actor string) ([]Issued, error) {
	out := make([]Issued, len(docs))
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The counter's lock first, as Issue takes it before a first issue:
		// the records read under it are the committed ones.
		if err := lockCounter(ctx, tx, tenantID, kind); err != nil {
			return err
		}
		known, err := lockIssuedMany(ctx, tx, tenantID, kind, docs)
		if err != nil {
			return err
		}
		return issueMany(ctx, tx, tenantID, kind, docs, known, out, actor)
	})
	if err != nil {
		return nil, fmt.Errorf("reports: issue %d %ss: %w", len(docs), kind, err)
	}
	return out, nil
}

type issuedRow struct {
	Issued
	hash []byte
}

func lockIssuedMany(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind string, docs []Issue) (map[string]issuedRow, error) {
	subjects := make([]string, len(docs))
	for i, d := range docs {
		subjects[i] = d.Subject
	}
	rows, _ := tx.Query(ctx, `SELECT subject, number, revision, first_issued_at, issued_at, content_hash FROM reports.issued_documents
		WHERE tenant_id = $1 AND kind = $2 AND subject = ANY($3) FOR UPDATE`, tenantID, kind, subjects)
	known := map[string]issuedRow{}
	var subject string
	var r issuedRow
	if _, err := pgx.ForEachRow(rows, []any{&subject, &r.Number, &r.Revision, &r.FirstIssuedAt, &r.IssuedAt, &r.hash}, func() error {
		known[subject] = r
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lock documents: %w", err)
	}
	return known, nil
}

// issueMany writes the new and revised records and their audit rows, and
// fills out.
func issueMany(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind string, docs []Issue, known map[string]issuedRow, out []Issued, actor string) error {
	fresh, revised := sortIssues(docs, known, out)
	created, err := issueFresh(ctx, tx, tenantID, kind, docs, fresh, out, actor)
	if err != nil {
		return err
	}
	updated, err := issueRevised(ctx, tx, tenantID, kind, docs, revised, known, out, actor)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	if err := audit.QueueAll(ctx, b, append(created, updated...)); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

// sortIssues splits docs into the positions of those never issued (fresh)
// and of those whose content changed since (revised); an unchanged one is
// answered from known into out.
func sortIssues(docs []Issue, known map[string]issuedRow, out []Issued) (fresh, revised []int) {
	for i, d := range docs {
		k, ok := known[d.Subject]
		switch {
		case !ok:
			fresh = append(fresh, i)
		case string(k.hash) != string(d.Hash):
			revised = append(revised, i)
		default:
			out[i] = k.Issued
		}
	}
	return fresh, revised
}

// issueFresh numbers and records the documents never issued (docs at
// fresh), fills out, and returns their audit rows.
func issueFresh(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind string, docs []Issue, fresh []int, out []Issued, actor string) ([]audit.Entry, error) {
	if len(fresh) == 0 {
		return nil, nil
	}
	var last int64
	if err := tx.QueryRow(ctx, `UPDATE reports.document_counters SET last_value = last_value + $3 WHERE tenant_id = $1 AND kind = $2 RETURNING last_value`,
		tenantID, kind, len(fresh)).Scan(&last); err != nil {
		return nil, fmt.Errorf("take numbers: %w", err)
	}
	var entries []audit.Entry
	subjects, numbers, hashes := make([]string, len(fresh)), make([]int64, len(fresh)), make([][]byte, len(fresh))
	for j, i := range fresh {
		subjects[j], numbers[j], hashes[j] = docs[i].Subject, last-int64(len(fresh))+int64(j)+1, docs[i].Hash
		entries = append(entries, audit.Entry{TenantID: tenantID.String(), EntityType: documentEntity[kind], EntityID: docs[i].Subject, Action: audit.Created, Actor: actor})
	}
	rows, _ := tx.Query(ctx, `INSERT INTO reports.issued_documents (tenant_id, kind, subject, number, content_hash)
		SELECT $1, $2, s, n, h FROM unnest($3::text[], $4::bigint[], $5::bytea[]) WITH ORDINALITY AS u(s, n, h, o) ORDER BY o
		RETURNING subject, number, revision, first_issued_at, issued_at`, tenantID, kind, subjects, numbers, hashes)
	if err := collectInto(rows, docs, out); err != nil {
		return nil, fmt.Errorf("record documents: %w", err)
	}
	return entries, nil
}

// issueRevised records a new revision of each document whose content
// changed (docs at revised), fills out, and returns their audit rows.
func issueRevised(ctx context.Context, tx pgx.Tx, tenantID uuid.UUID, kind string, docs []Issue, revised []int, known map[string]issuedRow, out []Issued, actor string) ([]audit.Entry, error) {
	if len(revised) == 0 {
		return nil, nil
	}
	var entries []audit.Entry
	subjects, hashes := make([]string, len(revised)), make([][]byte, len(revised))
	for j, i := range revised {
		subjects[j], hashes[j] = docs[i].Subject, docs[i].Hash
		old := known[docs[i].Subject].Revision
		entries = append(entries, audit.Entry{TenantID: tenantID.String(), EntityType: documentEntity[kind], EntityID: docs[i].Subject, Action: audit.Updated,
			Changes: map[string]audit.Change{"Revision": {Old: old, New: old + 1}}, Actor: actor})
	}
	rows, _ := tx.Query(ctx, `UPDATE reports.issued_documents d SET revision = revision + 1, content_hash = u.h, issued_at = now()
		FROM unnest($3::text[], $4::bytea[]) WITH ORDINALITY AS u(s, h, o)
		WHERE d.tenant_id = $1 AND d.kind = $2 AND d.subject = u.s
		RETURNING u.o, d.number, d.revision, d.first_issued_at, d.issued_at`, tenantID, kind, subjects, hashes)
	var o int
	var is Issued
	if _, err := pgx.ForEachRow(rows, []any{&o, &is.Number, &is.Revision, &is.FirstIssuedAt, &is.IssuedAt}, func() error {
		out[revised[o-1]] = is
		return nil
	}); err != nil {
		return nil, fmt.Errorf("revise documents: %w", err)
	}
	return entries, nil
}

// collectInto reads the inserted records into out at their documents'
// positions.
func collectInto(rows pgx.Rows, docs []Issue, out []Issued) error {
	at := make(map[string]int, len(docs))
	for i, d := range docs {
		at[d.Subject] = i
	}
	var subject string
	var is Issued
	_, err := pgx.ForEachRow(rows, []any{&subject, &is.Number, &is.Revision, &is.FirstIssuedAt, &is.IssuedAt}, func() error {
		out[at[subject]] = is
		return nil
	})
	return err
}
