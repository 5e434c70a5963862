package contacts

import (
	"context"
	"strings"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/contacts/store"
)

// directoryServer serves the internal ContactDirectoryService for the
// orders service: whether a contact can take an order, and saving an
// order's address to its contact. The gateway maps none of it.
type directoryServer struct {
	contactsv1.UnimplementedContactDirectoryServiceServer
	s *Service
}

// CheckContact reports whether the contact exists in the tenant and is
// active (a merged contact: whether its survivor is). A contact id that
// does not exist is an answer, not an error: the caller decides how to
// report it.
func (d *directoryServer) CheckContact(ctx context.Context, req *contactsv1.CheckContactRequest) (*contactsv1.CheckContactResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.OrdersCreate, scopes.ContactsView, scopes.DonationsView)
	if err != nil {
		return nil, err
	}
	if req.GetContactId() <= 0 {
		return &contactsv1.CheckContactResponse{}, nil
	}
	t, err := d.s.store.CheckOrderTarget(ctx, p.Tenant(), req.GetContactId())
	if err != nil {
		return nil, err
	}
	return &contactsv1.CheckContactResponse{Exists: t.Exists, IsActive: t.IsActive, Merged: t.Merged}, nil
}

var directoryAddressTypes = []string{"Billing", "Shipping"}

// AddContactAddress appends an order's address to the contact unless an
// equal one is there (store.AddOrderAddress).
func (d *directoryServer) AddContactAddress(ctx context.Context, req *contactsv1.AddContactAddressRequest) (*contactsv1.AddContactAddressResponse, error) {
	p, err := authctx.RequireAny(ctx, req.GetTenantId(), scopes.OrdersCreate, scopes.ContactsEdit)
	if err != nil {
		return nil, err
	}
	addr, err := orderAddress(req)
	if err != nil {
		return nil, err
	}
	tenant := p.Tenant()
	// The new row's id is set aside before the transaction, which must
	// not wait for a second pooled connection to refill the tenant's
	// block (pkg/counter); unused when the address is there already, it
	// goes back.
	ids, err := d.s.store.IDs().Reserve(ctx, tenant, store.CounterAddress, 1)
	if err != nil {
		return nil, err
	}
	defer ids.Release()
	id, added, err := d.s.store.AddOrderAddress(ctx, tenant, req.GetContactId(), addr, ids, p.Actor())
	if err != nil {
		return nil, err
	}
	return &contactsv1.AddContactAddressResponse{AddressId: id, Added: added}, nil
}

// orderAddress validates and normalizes the address of a request.
func orderAddress(req *contactsv1.AddContactAddressRequest) (store.OrderAddress, error) {
	var v apperr.Violations
	kind := ""
	for _, k := range directoryAddressTypes {
		if strings.EqualFold(k, req.GetAddressType()) {
			kind = k
		}
	}
	if kind == "" {
		v.Add("AddressType", "'AddressType' must be Billing or Shipping.")
	}
	line1 := strings.TrimSpace(req.GetLine1())
	if line1 == "" {
		v.Add("Line1", "'Line1' must not be empty.")
	}
	if err := v.Err(); err != nil {
		return store.OrderAddress{}, err
	}
	country := strings.TrimSpace(req.GetCountry())
	if c, ok := normalize.Country(country); ok {
		country = c
	}
	postal, postalKey, _ := normalize.PostalCode(strings.TrimSpace(req.GetPostalCode()), country)
	return store.OrderAddress{Type: kind, Line1: line1, Line2: optional(strings.TrimSpace(req.GetLine2())), City: optional(strings.TrimSpace(req.GetCity())),
		State: optional(strings.TrimSpace(req.GetStateProvince())), PostalCode: optional(postal), PostalKey: postalKey, Country: optional(country)}, nil
}
