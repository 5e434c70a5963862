package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/almoner/almoner/pkg/audit"
	"github.com/almoner/almoner/pkg/db"
)

// Merge is a merge of contacts (docs/merge.md): Duplicate into Survivor.
type Merge struct {
	Tenant    uuid.UUID
	Survivor  int64
	Duplicate int64
	// Choices maps a property to "survivor" or "duplicate" (MergeChoices).
	Choices map[string]string
	// Actor is the audit actor of the principal that asked for it.
	Actor string
	// Done is true when the merge had already finished.
	Done bool
}

// Field choice values.
const (
	ChooseSurvivor  = "survivor"
	ChooseDuplicate = "duplicate"
)

// MergeChoices are the properties a merge may take from either contact.
var MergeChoices = []string{"firstName", "lastName", "organizationName", "externalId", "notes", "email", "phone", "address", "communicationPreferences"}

// Errors of a merge the server answers as domain errors.
var (
	// ErrMergeTypes: an individual and an organization are never the same.
	ErrMergeTypes = errors.New("contacts of different types")
	// ErrMergeBusy: either contact is in a merge that has not finished.
	ErrMergeBusy = errors.New("a merge of either contact is under way")
)

// MergeRefError is a merge naming a contact that is not there: which one
// (the duplicate is named in the body, the survivor in the path).
type MergeRefError struct {
	Duplicate bool
	Err       error
}

func (e *MergeRefError) Error() string {
	which := "survivor"
	if e.Duplicate {
		which = "duplicate"
	}
	return which + ": " + e.Err.Error()
}

func (e *MergeRefError) Unwrap() error { return e.Err }

// BeginMerge is the saga's first step: in one transaction it locks both
// contacts (in id order), checks them, and records the merge as pending.
// A pending merge of the same pair is resumed (its recorded choices win);
// a duplicate already merged into the survivor is answered Done; any other
// pending merge touching either contact is ErrMergeBusy.
func (s *Store) BeginMerge(ctx context.Context, m Merge) (Merge, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		types, merged, err := lockPair(ctx, tx, m.Tenant, m.Survivor, m.Duplicate)
		if err != nil {
			return err
		}
		if into, ok := merged[m.Survivor]; ok {
			return &MergeRefError{Err: &MergedError{ID: m.Survivor, Into: into}}
		}
		if into, ok := merged[m.Duplicate]; ok {
			if into == m.Survivor {
				m.Done = true
				return nil
			}
			return &MergeRefError{Duplicate: true, Err: &MergedError{ID: m.Duplicate, Into: into}}
		}
		if types[m.Survivor] != types[m.Duplicate] {
			return ErrMergeTypes
		}
		return recordPending(ctx, tx, &m)
	})
	if err != nil {
		return Merge{}, fmt.Errorf("contacts: begin merge of %d into %d: %w", m.Duplicate, m.Survivor, err)
	}
	return m, nil
}

// lockPair locks the two contacts in id order and returns their types and,
// for tombstones, the contact each was merged into. A contact not in the
// tenant is a MergeRefError of db.ErrNotFound.
func lockPair(ctx context.Context, tx pgx.Tx, tenant uuid.UUID, survivor, duplicate int64) (map[int64]string, map[int64]int64, error) {
	rows, err := tx.Query(ctx, `SELECT id, contact_type, merged_into FROM contacts.contacts
		WHERE tenant_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE`, tenant, []int64{survivor, duplicate})
	if err != nil {
		return nil, nil, fmt.Errorf("lock contacts: %w", err)
	}
	types, merged := map[int64]string{}, map[int64]int64{}
	var (
		id   int64
		typ  string
		into *int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &typ, &into}, func() error {
		types[id] = typ
		if into != nil {
			merged[id] = *into
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("lock contacts: %w", err)
	}
	if _, ok := types[survivor]; !ok {
		return nil, nil, &MergeRefError{Err: db.ErrNotFound}
	}
	if _, ok := types[duplicate]; !ok {
		return nil, nil, &MergeRefError{Duplicate: true, Err: db.ErrNotFound}
	}
	return types, merged, nil
}

// recordPending writes the pending merge row, or resumes the pending row
// of the same pair.
func recordPending(ctx context.Context, tx pgx.Tx, m *Merge) error {
	rows, err := tx.Query(ctx, `SELECT duplicate_id, survivor_id, field_choices FROM contacts.merges
		WHERE tenant_id = $1 AND state = 'pending' AND (duplicate_id = ANY($2) OR survivor_id = ANY($2))`,
		m.Tenant, []int64{m.Survivor, m.Duplicate})
	if err != nil {
		return fmt.Errorf("read pending merges: %w", err)
	}
	var (
		dup, surv int64
		choices   []byte
		same      bool
		busy      bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&dup, &surv, &choices}, func() error {
		if dup == m.Duplicate && surv == m.Survivor {
			same, m.Choices = true, nil
			return json.Unmarshal(choices, &m.Choices)
		}
		busy = true
		return nil
	}); err != nil {
		return fmt.Errorf("read pending merges: %w", err)
	}
	switch {
	case busy:
		return ErrMergeBusy
	case same:
		return nil
	}
	choices, err = json.Marshal(nonNilMap(m.Choices))
	if err != nil {
		return fmt.Errorf("encode field choices: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO contacts.merges (tenant_id, duplicate_id, survivor_id, field_choices, actor, state)
		VALUES ($1, $2, $3, $4, $5, 'pending')`, m.Tenant, m.Duplicate, m.Survivor, choices, m.Actor); err != nil {
		return fmt.Errorf("record pending merge: %w", err)
	}
	return nil
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// FinishMerge is the saga's last step, after the orders service moved the
// duplicate's orders: in one transaction it moves the duplicate's rows,
// tags and relationships to the survivor, applies the field choices,
// tombstones the duplicate (and re-points its own tombstones), writes the
// audit rows (survivor Updated, duplicate Deleted naming the survivor,
// related contacts Updated) and marks the merge done. A merge already done
// (by another replica's recovery) is left as it is. It returns the
// survivor.
func (s *Store) FinishMerge(ctx context.Context, m Merge) (Contact, error) {
	var out Contact
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Import batches match against live contacts under this lock; a
		// merge never tombstones a contact one of them is updating.
		if err := importLock(ctx, tx, m.Tenant); err != nil {
			return err
		}
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM contacts.merges WHERE tenant_id = $1 AND duplicate_id = $2 AND survivor_id = $3 FOR UPDATE`,
			m.Tenant, m.Duplicate, m.Survivor).Scan(&state)
		if err != nil {
			return fmt.Errorf("lock merge: %w", db.Interpret(err))
		}
		if state == "pending" {
			if err := finish(ctx, tx, m); err != nil {
				return err
			}
		}
		out, err = get(ctx, tx, m.Tenant, m.Survivor, false)
		return err
	})
	if err != nil {
		return Contact{}, fmt.Errorf("contacts: finish merge of %d into %d: %w", m.Duplicate, m.Survivor, err)
	}
	return out, nil
}

func finish(ctx context.Context, tx pgx.Tx, m Merge) error {
	// The pair and every contact related to either, in one pass in id
	// order (lockWithRelated), before lockPair and lockRelated re-lock them.
	if err := lockWithRelated(ctx, tx, m.Tenant, []int64{m.Survivor, m.Duplicate}, nil); err != nil {
		return err
	}
	if _, _, err := lockPair(ctx, tx, m.Tenant, m.Survivor, m.Duplicate); err != nil {
		return err
	}
	// Their relationship with each other ends with the duplicate.
	if _, err := tx.Exec(ctx, `DELETE FROM contacts.contact_relationships WHERE tenant_id = $1
		AND ((contact_id = $2 AND related_contact_id = $3) OR (contact_id = $3 AND related_contact_id = $2))`,
		m.Tenant, m.Survivor, m.Duplicate); err != nil {
		return fmt.Errorf("drop the pair's relationships: %w", err)
	}
	before, err := get(ctx, tx, m.Tenant, m.Survivor, false)
	if err != nil {
		return err
	}
	dup, err := get(ctx, tx, m.Tenant, m.Duplicate, false)
	if err != nil {
		return err
	}
	f := MergedFields(before.Fields, dup.Fields, m.Survivor, m.Choices)
	related, err := lockRelated(ctx, tx, m.Tenant, m.Survivor, f)
	if err != nil {
		return err
	}
	// The duplicate's related contacts are in f's relationships, so they
	// are locked and touched with the survivor's.
	b := &pgx.Batch{}
	for _, table := range []string{"contact_phones", "contact_emails", "contact_addresses"} {
		b.Queue(`DELETE FROM contacts.`+table+` WHERE tenant_id = $1 AND contact_id = $2`, m.Tenant, m.Duplicate)
	}
	b.Queue(`DELETE FROM contacts.contact_relationships WHERE tenant_id = $1 AND (contact_id = $2 OR related_contact_id = $2)`, m.Tenant, m.Duplicate)
	b.Queue(`UPDATE contacts.contacts SET merged_into = $3, is_active = false, version = version + 1, updated_at = now()
		WHERE tenant_id = $1 AND id = $2`, m.Tenant, m.Duplicate, m.Survivor)
	b.Queue(`UPDATE contacts.contacts SET merged_into = $3 WHERE tenant_id = $1 AND merged_into = $2`, m.Tenant, m.Duplicate, m.Survivor)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("tombstone the duplicate: %w", err)
	}
	if err := updateContactRow(ctx, tx, m.Tenant, m.Survivor, f); err != nil {
		return err
	}
	if err := writeRows(ctx, tx, m.Tenant, m.Survivor, f, &before, &newIDs{}); err != nil {
		return err
	}
	return recordMerge(ctx, tx, m, before, related)
}

// recordMerge writes the merge's audit rows and marks it done.
func recordMerge(ctx context.Context, tx pgx.Tx, m Merge, before Contact, related []relatedState) error {
	after, err := get(ctx, tx, m.Tenant, m.Survivor, false)
	if err != nil {
		return err
	}
	tenant := m.Tenant.String()
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityType, EntityID: EntityID(m.Survivor),
		Action: audit.Updated, Changes: audit.Diff(before.Snapshot(), after.Snapshot()), Actor: m.Actor}); err != nil {
		return fmt.Errorf("record audit of the survivor: %w", err)
	}
	if err := audit.Record(ctx, tx, audit.Entry{TenantID: tenant, EntityType: EntityType, EntityID: EntityID(m.Duplicate),
		Action: audit.Deleted, Changes: map[string]audit.Change{"mergedInto": {Old: nil, New: m.Survivor}}, Actor: m.Actor}); err != nil {
		return fmt.Errorf("record audit of the duplicate: %w", err)
	}
	if err := touchRelated(ctx, tx, m.Tenant, related, m.Actor); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE contacts.merges SET state = 'done', finished_at = now() WHERE tenant_id = $1 AND duplicate_id = $2`,
		m.Tenant, m.Duplicate); err != nil {
		return fmt.Errorf("mark merge done: %w", err)
	}
	return nil
}

// MergedFields is the survivor s after merging the duplicate d into it
// (docs/merge.md): each chosen property from the chosen side, unchosen
// ones from s or, where s has none, d; the stricter communication
// preferences; tags of both; d's emails, phones and addresses that s does
// not have (by normalized value), keeping their ids, with the chosen
// side's primary; both sides' relationships with the other contacts.
func MergedFields(s, d Fields, survivorID int64, choices map[string]string) Fields {
	pick := func(name, sv, dv string) string {
		switch choices[name] {
		case ChooseDuplicate:
			return dv
		case ChooseSurvivor:
			return sv
		}
		if sv == "" {
			return dv
		}
		return sv
	}
	out := s
	out.FirstName = pick("firstName", s.FirstName, d.FirstName)
	out.LastName = pick("lastName", s.LastName, d.LastName)
	out.OrganizationName = pick("organizationName", s.OrganizationName, d.OrganizationName)
	out.ExternalID = pick("externalId", s.ExternalID, d.ExternalID)
	out.Notes = pick("notes", s.Notes, d.Notes)
	out.AssignedUserID = pick("assignedUserId", s.AssignedUserID, d.AssignedUserID)
	switch choices["communicationPreferences"] {
	case ChooseDuplicate:
		out.DoNotEmail, out.DoNotMail, out.DoNotCall, out.DoNotAcknowledge = d.DoNotEmail, d.DoNotMail, d.DoNotCall, d.DoNotAcknowledge
	case ChooseSurvivor:
	default:
		out.DoNotEmail, out.DoNotMail, out.DoNotCall = s.DoNotEmail || d.DoNotEmail, s.DoNotMail || d.DoNotMail, s.DoNotCall || d.DoNotCall
		out.DoNotAcknowledge = s.DoNotAcknowledge || d.DoNotAcknowledge
	}
	out.Tags = slices.Clone(s.Tags)
	for _, t := range d.Tags {
		if !slices.ContainsFunc(out.Tags, func(x string) bool { return strings.EqualFold(x, t) }) {
			out.Tags = append(out.Tags, t)
		}
	}
	out.Emails = mergeRows(s.Emails, d.Emails, choices["email"] == ChooseDuplicate,
		func(e Email) string { return e.Key }, func(e *Email) *bool { return &e.IsPrimary })
	out.Phones = mergeRows(s.Phones, d.Phones, choices["phone"] == ChooseDuplicate,
		func(p Phone) string { return p.Key }, func(p *Phone) *bool { return &p.IsPrimary })
	out.Addresses = mergeRows(s.Addresses, d.Addresses, choices["address"] == ChooseDuplicate,
		addressKey, func(a *Address) *bool { return &a.IsPrimary })
	out.Relationships = nil
	seen := map[relRow]bool{}
	for _, r := range append(slices.Clone(s.Relationships), d.Relationships...) {
		if r.RelatedID == survivorID {
			continue
		}
		if c := canonical(survivorID, r); !seen[c] {
			seen[c] = true
			out.Relationships = append(out.Relationships, Relationship{RelatedID: r.RelatedID, Type: r.Type})
		}
	}
	return out
}

// mergeRows is s's rows then d's rows whose key s lacks. The primary is
// s's, or d's when preferDup (or s has none); a row of d already on s
// makes s's copy the primary.
func mergeRows[T any](s, d []T, preferDup bool, key func(T) string, primary func(*T) *bool) []T {
	out := slices.Clone(s)
	at := map[string]int{}
	for i, r := range out {
		at[key(r)] = i
	}
	dupPrimary := ""
	for _, r := range d {
		if *primary(&r) {
			dupPrimary = key(r)
		}
		if _, ok := at[key(r)]; ok {
			continue
		}
		*primary(&r) = false
		at[key(r)] = len(out)
		out = append(out, r)
	}
	hasPrimary := slices.ContainsFunc(out, func(r T) bool { return *primary(&r) })
	if dupPrimary != "" && (preferDup || !hasPrimary) {
		for i := range out {
			*primary(&out[i]) = i == at[dupPrimary]
		}
	}
	return out
}

// PendingMerges returns up to limit merges of every tenant still pending
// after age: the recovery loop finishes them.
func (s *Store) PendingMerges(ctx context.Context, age time.Duration, limit int) ([]Merge, error) {
	rows, err := s.pool.Query(ctx, `SELECT tenant_id, survivor_id, duplicate_id, field_choices, actor FROM contacts.merges
		WHERE state = 'pending' AND created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT $2`, age.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("contacts: pending merges: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Merge, error) {
		var m Merge
		var choices []byte
		if err := r.Scan(&m.Tenant, &m.Survivor, &m.Duplicate, &choices, &m.Actor); err != nil {
			return Merge{}, err
		}
		return m, json.Unmarshal(choices, &m.Choices)
	})
	if err != nil {
		return nil, fmt.Errorf("contacts: pending merges: %w", err)
	}
	return out, nil
}
