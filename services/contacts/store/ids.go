package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/almoner/almoner/pkg/counter"
)

// CounterTable holds each tenant's counters of contact and row ids
// (migrations/00003_tenant_counters.sql).
const CounterTable = "contacts.counters"

// Names of the tenant's counters in CounterTable: contact ids and the ids
// of phone, email and address rows, each numbered 1, 2, 3… per tenant.
const (
	CounterContact = "contact"
	CounterPhone   = "phone"
	CounterEmail   = "email"
	CounterAddress = "address"
)

// IDs numbers the tenant's contacts and their rows: for writers outside
// the store (the directory's address, bulk loads) that must take ids from
// the same counters.
func (s *Store) IDs() *counter.Counter { return s.ids }

// newIDs is the ids a write may give: a contact id (on a create) and one
// per phone, email and address row that may be new, set aside before the
// write's transaction, which must not wait for a second pooled connection
// to refill a block (pkg/counter).
type newIDs struct {
	contact, phone, email, address *counter.Reservation
}

// reserveIDs sets aside contacts ids for a new contact (contacts is 0 or
// 1) and for every row of f, whether or not the row turns out to be new.
func (s *Store) reserveIDs(ctx context.Context, tenant uuid.UUID, contacts int, f Fields) (*newIDs, error) {
	ids := &newIDs{}
	for _, r := range []struct {
		into **counter.Reservation
		name string
		n    int
	}{{&ids.contact, CounterContact, contacts}, {&ids.phone, CounterPhone, len(f.Phones)},
		{&ids.email, CounterEmail, len(f.Emails)}, {&ids.address, CounterAddress, len(f.Addresses)}} {
		res, err := s.ids.Reserve(ctx, tenant, r.name, r.n)
		if err != nil {
			ids.release()
			return nil, fmt.Errorf("reserve %s ids: %w", r.name, err)
		}
		*r.into = res
	}
	return ids, nil
}

// rewind starts a retried transaction on the same ids: its previous
// attempt was rolled back, so none of them was written.
func (ids *newIDs) rewind() {
	for _, r := range []*counter.Reservation{ids.contact, ids.phone, ids.email, ids.address} {
		if r != nil {
			r.Rewind()
		}
	}
}

// release gives back the ids the write did not use (rows that kept their
// ids, a create refused before its insert), for the tenant's next writes.
func (ids *newIDs) release() {
	for _, r := range []*counter.Reservation{ids.contact, ids.phone, ids.email, ids.address} {
		r.Release()
	}
}
