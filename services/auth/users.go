package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/mail"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/scopes"
	"github.com/almoner/almoner/services/auth/store"
)

// Typed codes of the user rules.
const (
	codeLastOwner     = "User.LastOwner"
	codeAlreadyMember = "User.AlreadyMember"
)

var errUserNotFound = apperr.NotFound("User")

type userServer struct {
	authv1.UnimplementedUserServiceServer
	s *Service
}

// ListUsers lists the tenant's members.
func (u *userServer) ListUsers(ctx context.Context, req *authv1.ListUsersRequest) (*authv1.ListUsersResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.UsersManage)
	if err != nil {
		return nil, err
	}
	members, err := u.s.store.ListMembers(ctx, p.Tenant())
	if err != nil {
		return nil, err
	}
	out := &authv1.ListUsersResponse{Users: make([]*authv1.User, 0, len(members))}
	for _, m := range members {
		out.Users = append(out.Users, toUser(m))
	}
	return out, nil
}

// CreateUser invites a person and queues the invitation email.
func (u *userServer) CreateUser(ctx context.Context, req *authv1.CreateUserRequest) (*authv1.CreateUserResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.UsersManage)
	if err != nil {
		return nil, err
	}
	if err := u.s.assignable(ctx, p, req.GetRole()); err != nil {
		return nil, err
	}
	email, err := validateInvite(req.GetEmail(), "")
	if err != nil {
		return nil, err
	}
	if req.GetRole() == RoleOwner && !p.HasScope(scopes.OwnersManage) {
		return nil, apperr.MissingPermission(scopes.OwnersManage)
	}
	m, _, err := u.s.invite(ctx, p.Tenant(), email, req.GetRole(), p.Actor())
	if err != nil {
		return nil, err
	}
	return &authv1.CreateUserResponse{User: toUser(m)}, nil
}

// UpdateUser changes a member's role.
func (u *userServer) UpdateUser(ctx context.Context, req *authv1.UpdateUserRequest) (*authv1.UpdateUserResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.UsersManage)
	if err != nil {
		return nil, err
	}
	if err := u.s.assignable(ctx, p, req.GetRole()); err != nil {
		return nil, err
	}
	m, err := u.s.changeMember(ctx, p, req.GetUserId(), req.GetRole())
	if err != nil {
		return nil, err
	}
	return &authv1.UpdateUserResponse{User: toUser(m)}, nil
}

// DeleteUser ends a membership.
func (u *userServer) DeleteUser(ctx context.Context, req *authv1.DeleteUserRequest) (*authv1.DeleteUserResponse, error) {
	p, err := authctx.Require(ctx, req.GetTenantId(), scopes.UsersManage)
	if err != nil {
		return nil, err
	}
	if _, err := u.s.changeMember(ctx, p, req.GetUserId(), ""); err != nil {
		return nil, err
	}
	return &authv1.DeleteUserResponse{}, nil
}

// changeMember sets a member's role, or ends the membership with role "".
// Touching an owner, or making one, needs owners:manage.
func (s *Service) changeMember(ctx context.Context, p authctx.Principal, userID, role string) (store.Member, error) {
	id, err := uuid.Parse(userID)
	if err != nil {
		return store.Member{}, errUserNotFound
	}
	if role == RoleOwner && !p.HasScope(scopes.OwnersManage) {
		return store.Member{}, apperr.MissingPermission(scopes.OwnersManage)
	}
	m, err := s.store.ChangeMember(ctx, store.MemberChange{
		TenantID: p.Tenant(), UserID: id, Role: role, Actor: p.Actor(),
		Allow: func(m store.Member) error {
			if m.Role == RoleOwner && !p.HasScope(scopes.OwnersManage) {
				return apperr.MissingPermission(scopes.OwnersManage)
			}
			return nil
		},
	})
	switch {
	case errors.Is(err, db.ErrNotFound):
		return store.Member{}, errUserNotFound
	case errors.Is(err, store.ErrLastOwner):
		return store.Member{}, apperr.Rule(codeLastOwner, "The tenant must keep at least one active owner.")
	case err != nil:
		return store.Member{}, err
	}
	// The member's next request must see the change on every gateway.
	s.awaitCaches(ctx)
	return m, nil
}

// validateInvite checks an invitation's email and a built-in role (none
// when role is empty: the caller checked it); it returns the email
// trimmed.
func validateInvite(email, role string) (string, error) {
	var v apperr.Violations
	addr, _, ok := normalize.Email(email)
	if !ok {
		v.Add("Email", "Email must be a valid email address of at most %d characters.", normalize.MaxEmailLength)
	}
	if _, ok := RoleScopes(role); !ok && role != "" {
		v.Add("Role", "Role must be one of owner, admin, fundraiser, finance, viewer.")
	}
	return addr, v.Err()
}

// invitationTTL is how long an invitation can be accepted.
const invitationTTL = 7 * 24 * time.Hour

// invite writes the membership, its invitation and its email, and returns
// the member and the invitation's token.
func (s *Service) invite(ctx context.Context, tenantID uuid.UUID, email, role, actor string) (store.Member, string, error) {
	token := newToken()
	link := mail.Link(s.cfg.Mail.PublicURL, "/accept-invitation", token)
	m, err := s.store.Invite(ctx, store.NewInvitation{
		TenantID: tenantID, Email: email, Role: role, TokenHash: hashToken(token),
		ExpiresAt: s.now().Add(invitationTTL), Actor: actor,
		Mail: func(uuid.UUID) mail.Message {
			return mail.Message{TenantID: tenantID.String(), Kind: "invitation", To: email,
				Subject: "You are invited to Almoner",
				Text: fmt.Sprintf("You have been invited to work in Almoner as %s.\n\nAccept the invitation within 7 days:\n%s\n\n"+
					"If you did not expect this email, ignore it.\n", role, link)}
		},
	})
	switch {
	case errors.Is(err, store.ErrAlreadyMember):
		return store.Member{}, "", apperr.FieldRule(codeAlreadyMember, "Email", "This email is already a member of the tenant.")
	case errors.Is(err, db.ErrForeignKey):
		return store.Member{}, "", errTenantNotFound
	case err != nil:
		return store.Member{}, "", err
	}
	return m, token, nil
}

// newToken returns 32 random bytes, URL-safe: an invitation's or a
// session's secret.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashToken is what the database keeps of a token.
func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func toUser(m store.Member) *authv1.User {
	u := &authv1.User{Id: m.ID.String(), Email: m.Email, FirstName: m.FirstName, LastName: m.LastName, Role: m.Role, Status: m.Status,
		MfaEnabled: m.MfaEnabled}
	if m.LastSignInAt != nil {
		u.LastSignInAt = timestamppb.New(*m.LastSignInAt)
	}
	return u
}

// membershipServer is the internal MembershipService.
type membershipServer struct {
	authv1.UnimplementedMembershipServiceServer
	s *Service
}

// GetMembership answers whether a user is a member of the tenant. The
// caller's principal (forwarded by contacts or reports) must be of that
// tenant: no service learns another tenant's staff through it.
func (ms *membershipServer) GetMembership(ctx context.Context, req *authv1.GetMembershipRequest) (*authv1.GetMembershipResponse, error) {
	p, ok := authctx.FromIncoming(ctx)
	if !ok {
		return nil, apperr.Unauthenticated()
	}
	if !strings.EqualFold(p.TenantID, req.GetTenantId()) {
		return nil, errTenantNotFound
	}
	user, err := uuid.Parse(req.GetUserId())
	if err != nil {
		return &authv1.GetMembershipResponse{}, nil
	}
	m, err := ms.s.store.Member(ctx, p.Tenant(), user)
	if errors.Is(err, db.ErrNotFound) {
		return &authv1.GetMembershipResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &authv1.GetMembershipResponse{Member: true, Status: m.Status}, nil
}
