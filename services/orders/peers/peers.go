package peers

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
)

// Contacts is what orders needs from the contacts service.
type Contacts interface {
	// Check reports whether the contact exists in the tenant, whether it
	// (a merged contact: its survivor) is active, and whether it was
	// merged into another.
	Check(ctx context.Context, p authctx.Principal, contactID int64) (ContactCheck, error)
	// AddAddress adds an address (Billing or Shipping) to the contact.
	AddAddress(ctx context.Context, p authctx.Principal, contactID int64, kind string, a *contactsv1.AddContactAddressRequest) error
}

// ContactCheck is the contacts service's answer about one contact.
type ContactCheck struct {
	Exists, Active, Merged bool
}

// Stock is what orders needs from the inventory service.
type Stock interface {
	Reserve(ctx context.Context, p authctx.Principal, req *inventoryv1.ReserveStockRequest) (*inventoryv1.ReserveStockResponse, error)
	Release(ctx context.Context, p authctx.Principal, req *inventoryv1.ReleaseStockRequest) error
}

// outgoing forwards the caller's principal to another service: this
// process signs it afresh for each call (authctx), so it is the caller's
// verified principal, or a System one for work the platform does itself.
func outgoing(ctx context.Context, p authctx.Principal) context.Context {
	return authctx.NewOutgoingContext(ctx, p)
}

// GRPCContacts is Contacts over the contacts service's
// ContactDirectoryService.
type GRPCContacts struct {
	// Conn dials the contacts service.
	Conn func() (contactsv1.ContactDirectoryServiceClient, error)
}

// Check asks the contacts service whether the contact exists and is
// active.
func (g GRPCContacts) Check(ctx context.Context, p authctx.Principal, contactID int64) (ContactCheck, error) {
	c, err := g.Conn()
	if err != nil {
		return ContactCheck{}, apperr.Unavailable("Contacts cannot be checked right now.", err)
	}
	resp, err := c.CheckContact(outgoing(ctx, p), &contactsv1.CheckContactRequest{TenantId: p.TenantID, ContactId: contactID})
	if err != nil {
		return ContactCheck{}, Upstream("Contacts cannot be checked right now.", err)
	}
	return ContactCheck{Exists: resp.GetExists(), Active: resp.GetIsActive(), Merged: resp.GetMerged()}, nil
}

// AddAddress saves an order's address to the contact.
func (g GRPCContacts) AddAddress(ctx context.Context, p authctx.Principal, contactID int64, kind string, a *contactsv1.AddContactAddressRequest) error {
	c, err := g.Conn()
	if err != nil {
		return apperr.Unavailable("The contact's address cannot be saved right now.", err)
	}
	a.TenantId, a.ContactId, a.AddressType = p.TenantID, contactID, kind
	_, err = c.AddContactAddress(outgoing(ctx, p), a)
	return err
}

// GRPCStock is Stock over the inventory service's
// StockReservationService.
type GRPCStock struct {
	// Conn dials the inventory service.
	Conn func() (inventoryv1.StockReservationServiceClient, error)
}

// Reserve reserves an order's item lines.
func (g GRPCStock) Reserve(ctx context.Context, p authctx.Principal, req *inventoryv1.ReserveStockRequest) (*inventoryv1.ReserveStockResponse, error) {
	c, err := g.Conn()
	if err != nil {
		return nil, apperr.Unavailable("Stock cannot be reserved right now.", err)
	}
	return c.ReserveStock(outgoing(ctx, p), req)
}

// Release gives an order's stock back.
func (g GRPCStock) Release(ctx context.Context, p authctx.Principal, req *inventoryv1.ReleaseStockRequest) error {
	c, err := g.Conn()
	if err != nil {
		return apperr.Unavailable("Stock cannot be released right now.", err)
	}
	_, err = c.ReleaseStock(outgoing(ctx, p), req)
	return err
}

// Upstream maps another service's failure: its own 4xx-like statuses are
// passed on unchanged (the caller's own request caused them), anything
// else is a 503.
func Upstream(msg string, err error) error {
	switch status.Code(err) {
	case codes.PermissionDenied, codes.NotFound, codes.InvalidArgument, codes.Unauthenticated:
		return err
	}
	return apperr.Unavailable(msg, err)
}

// ReserveViolation passes an inventory line failure on as it is: the
// inventory request is built line for line from the order's items, so its
// property paths (Items[0].Quantity) and typed codes are already the
// order's.
func ReserveViolation(err error) (error, bool) {
	if status.Code(err) != codes.InvalidArgument {
		return nil, false
	}
	return err, true
}

// Tenants reads what orders needs of a tenant's settings when the
// principal does not carry it (an imports runner's System principal).
type Tenants interface {
	// DefaultCurrency is the tenant's default ISO 4217 currency.
	DefaultCurrency(ctx context.Context, tenantID string) (string, error)
}

// GRPCTenants reads tenant settings from the auth service's internal
// TenantAdminService, with the calling service's own assertion.
type GRPCTenants struct {
	// Conn dials the auth service.
	Conn func() (authv1.TenantAdminServiceClient, error)
}

// DefaultCurrency reads the tenant's default currency.
func (g GRPCTenants) DefaultCurrency(ctx context.Context, tenantID string) (string, error) {
	c, err := g.Conn()
	if err != nil {
		return "", err
	}
	resp, err := c.GetTenant(ctx, &authv1.GetTenantRequest{TenantId: tenantID})
	if err != nil {
		return "", err
	}
	return resp.GetTenant().GetDefaultCurrency(), nil
}
