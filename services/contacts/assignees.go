package contacts

import (
	"context"
	"fmt"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/traceid"
	"github.com/almoner/almoner/services/contacts/store"
)

// AuthService is the name an assignment dials to check a membership.
const AuthService = "auth"

// assigneeMessage is the refusal of an assignedUserId that is no invited
// or active member of the tenant.
const assigneeMessage = "'Assigned User Id' must be the id of an invited or active staff user of the tenant."

// checkAssignee refuses a contact assigned to a user who is not an
// invited or active member of the tenant (400 under AssignedUserId). It
// asks the auth service, before the contact's transaction opens: no
// network call runs inside one. A member removed between this check and
// the commit keeps the assignment, as a member removed after it would;
// their portfolio is still readable by users:manage.
func (s *Service) checkAssignee(ctx context.Context, p authctx.Principal, f store.Fields) error {
	if f.AssignedUserID == "" {
		return nil
	}
	conn, err := s.auth.Conn()
	if err != nil {
		return err
	}
	callCtx := authctx.NewOutgoingContext(traceid.Forward(ctx), p)
	callCtx, cancel := context.WithTimeout(callCtx, s.cfg.GivingTimeout)
	defer cancel()
	m, err := authv1.NewMembershipServiceClient(conn).GetMembership(callCtx,
		&authv1.GetMembershipRequest{TenantId: p.TenantID, UserId: f.AssignedUserID})
	if err != nil {
		return fmt.Errorf("contacts: check assigned user: %w", err)
	}
	if !m.GetMember() || (m.GetStatus() != "invited" && m.GetStatus() != "active") {
		return apperr.Invalid(apperr.Violation{Field: "AssignedUserId", Message: assigneeMessage})
	}
	return nil
}
