package orders

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	inventoryv1 "github.com/almoner/almoner/pkg/api/almoner/inventory/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
)

// ContactDirectory is what orders needs from the contacts service.
type ContactDirectory interface {
	// Check reports whether the contact exists in the tenant and is active.
	Check(ctx context.Context, p authctx.Principal, contactID int64) (exists, active bool, err error)
	// AddAddress adds an address (Billing or Shipping) to the contact.
	AddAddress(ctx context.Context, p authctx.Principal, contactID int64, kind string, a *contactsv1.AddContactAddressRequest) error
}

// StockReserver is what orders needs from the inventory service.
type StockReserver interface {
	Reserve(ctx context.Context, p authctx.Principal, req *inventoryv1.ReserveStockRequest) (*inventoryv1.ReserveStockResponse, error)
	Release(ctx context.Context, p authctx.Principal, req *inventoryv1.ReleaseStockRequest) error
}

// outgoing forwards the caller's principal to another service: this
// process signs it afresh for each call (authctx), so it is the caller's
// verified principal, or a System one for work the platform does itself.
func outgoing(ctx context.Context, p authctx.Principal) context.Context {
	return authctx.NewOutgoingContext(ctx, p)
}

type grpcContacts struct {
	conn func() (contactsv1.ContactDirectoryServiceClient, error)
}

func (g grpcContacts) Check(ctx context.Context, p authctx.Principal, contactID int64) (bool, bool, error) {
	c, err := g.conn()
	if err != nil {
		return false, false, apperr.Unavailable("Contacts cannot be checked right now.", err)
	}
	resp, err := c.CheckContact(outgoing(ctx, p), &contactsv1.CheckContactRequest{TenantId: p.TenantID, ContactId: contactID})
	if err != nil {
		return false, false, upstream("Contacts cannot be checked right now.", err)
	}
	return resp.GetExists(), resp.GetIsActive(), nil
}

func (g grpcContacts) AddAddress(ctx context.Context, p authctx.Principal, contactID int64, kind string, a *contactsv1.AddContactAddressRequest) error {
	c, err := g.conn()
	if err != nil {
		return apperr.Unavailable("The contact's address cannot be saved right now.", err)
	}
	a.TenantId, a.ContactId, a.AddressType = p.TenantID, contactID, kind
	_, err = c.AddContactAddress(outgoing(ctx, p), a)
	return err
}

type grpcStock struct {
	conn func() (inventoryv1.StockReservationServiceClient, error)
}

func (g grpcStock) Reserve(ctx context.Context, p authctx.Principal, req *inventoryv1.ReserveStockRequest) (*inventoryv1.ReserveStockResponse, error) {
	c, err := g.conn()
	if err != nil {
		return nil, apperr.Unavailable("Stock cannot be reserved right now.", err)
	}
	return c.ReserveStock(outgoing(ctx, p), req)
}

func (g grpcStock) Release(ctx context.Context, p authctx.Principal, req *inventoryv1.ReleaseStockRequest) error {
	c, err := g.conn()
	if err != nil {
		return apperr.Unavailable("Stock cannot be released right now.", err)
	}
	_, err = c.ReleaseStock(outgoing(ctx, p), req)
	return err
}

// upstream maps another service's failure: its own 4xx-like statuses are
// passed on unchanged (the caller's own request caused them), anything
// else is a 503.
func upstream(msg string, err error) error {
	switch status.Code(err) {
	case codes.PermissionDenied, codes.NotFound, codes.InvalidArgument, codes.Unauthenticated:
		return err
	}
	return apperr.Unavailable(msg, err)
}

// reserveViolation passes an inventory line failure on as it is: the
// inventory request is built line for line from the order's items, so its
// property paths (Items[0].Quantity) and typed codes are already the
// order's.
func reserveViolation(err error) (error, bool) {
	if status.Code(err) != codes.InvalidArgument {
		return nil, false
	}
	return err, true
}
