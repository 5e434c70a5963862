package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	authv1 "github.com/almoner/almoner/pkg/api/almoner/auth/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/services/auth/mfa"
	"github.com/almoner/almoner/services/auth/password"
	"github.com/almoner/almoner/services/auth/store"
)

// SessionCookie is the session cookie's name.
const SessionCookie = "almoner_session"

// signInFailures is the failed sign-in policy: 10 per email per 15 minutes.
var signInFailures = ratelimit.Policy{Name: "sign-in-failures", Limit: 10, Window: 15 * time.Minute}

// maxNameLength bounds first and last names, in characters.
const maxNameLength = 100

type staffServer struct {
	authv1.UnimplementedStaffAuthServiceServer
	s *Service
}

// AcceptInvitation uses an invitation and signs its user in.
func (a *staffServer) AcceptInvitation(ctx context.Context, req *authv1.AcceptInvitationRequest) (*authv1.AcceptInvitationResponse, error) {
	s := a.s
	inv, err := s.store.InvitationByToken(ctx, hashToken(req.GetToken()))
	if errors.Is(err, store.ErrInvitationInvalid) {
		return nil, errInvitationInvalid()
	}
	if err != nil {
		return nil, err
	}
	acc, err := s.acceptance(inv, req)
	if err != nil {
		return nil, err
	}
	token := newToken()
	// A registered user with a second factor passes it after accepting.
	pending, action, err := mfa.Gate(ctx, s.store, s.now(), inv.User.ID)
	if err != nil {
		return nil, err
	}
	acc.Session = s.gated(s.newSession(ctx, inv.User.ID, token), pending, action)
	if _, err := s.store.Accept(ctx, acc); errors.Is(err, store.ErrInvitationInvalid) || errors.Is(err, store.ErrPasswordSet) {
		return nil, errInvitationInvalid()
	} else if err != nil {
		return nil, err
	}
	body, err := s.signedIn(ctx, inv.User.ID, token, pending)
	if err != nil {
		return nil, err
	}
	return &authv1.AcceptInvitationResponse{Session: body}, nil
}

func errInvitationInvalid() error {
	var v apperr.Violations
	v.Add("Token", "The invitation is unknown, used or expired.")
	return v.Err()
}

// acceptance checks the body against the invitation's user: a new user
// chooses a valid password and gives a name; a registered one proves
// their password.
func (s *Service) acceptance(inv store.Invitation, req *authv1.AcceptInvitationRequest) (store.Acceptance, error) {
	acc := store.Acceptance{Invitation: inv}
	var v apperr.Violations
	if inv.User.PasswordHash != nil {
		if ok, _ := password.Check(req.GetPassword(), *inv.User.PasswordHash); !ok {
			v.Add("Password", "An account with this email exists: give its password.")
		}
		return acc, v.Err()
	}
	if msg := password.Problem(req.GetPassword(), inv.User.Email); msg != "" {
		v.Add("Password", "%s", msg)
	}
	acc.FirstName, acc.LastName = strings.TrimSpace(req.GetFirstName()), strings.TrimSpace(req.GetLastName())
	for field, name := range map[string]string{"FirstName": acc.FirstName, "LastName": acc.LastName} {
		if name == "" || utf8.RuneCountInString(name) > maxNameLength {
			v.Add(field, "%s is required, at most %d characters.", field, maxNameLength)
		}
	}
	if err := v.Err(); err != nil {
		return acc, err
	}
	acc.NewPasswordHash = password.Hash(req.GetPassword(), s.cfg.Password)
	return acc, nil
}

// SignIn checks the credentials and starts a session. Every failure is
// the same 401 after the same work: an unknown email, or one without a
// password, is checked against a dummy hash of the same cost.
func (a *staffServer) SignIn(ctx context.Context, req *authv1.SignInRequest) (*authv1.SignInResponse, error) {
	s := a.s
	key := strings.ToLower(strings.TrimSpace(req.GetEmail()))
	if limited, err := s.limiter.Exceeded(ctx, signInFailures, key); err != nil {
		return nil, err
	} else if limited {
		return nil, apperr.RateLimited()
	}
	u, memberships, err := s.store.UserByEmail(ctx, key)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return nil, err
	}
	hash := s.dummyHash
	if err == nil && u.PasswordHash != nil {
		hash = *u.PasswordHash
	}
	ok, _ := password.Check(req.GetPassword(), hash)
	// An operator needs no membership (docs/operators.md).
	if !ok || err != nil || u.PasswordHash == nil || memberships == 0 && u.PlatformRole == "" {
		if _, err := s.limiter.Allow(ctx, signInFailures, key); err != nil {
			return nil, err
		}
		return nil, apperr.Unauthenticated()
	}
	return s.startSession(ctx, u.ID)
}

// startSession starts the session of a user whose password was right:
// one waiting for the second factor when the user has one and the browser
// is not trusted (mfa.Gate).
func (s *Service) startSession(ctx context.Context, user uuid.UUID) (*authv1.SignInResponse, error) {
	pending, action, err := mfa.Gate(ctx, s.store, s.now(), user)
	if err != nil {
		return nil, err
	}
	token := newToken()
	if _, err := s.store.StartSession(ctx, s.gated(s.newSession(ctx, user, token), pending, action)); err != nil {
		return nil, err
	}
	body, err := s.signedIn(ctx, user, token, pending)
	if err != nil {
		return nil, err
	}
	return &authv1.SignInResponse{Session: body}, nil
}

// newSession is a session of user for the presented token.
func (s *Service) newSession(ctx context.Context, user uuid.UUID, token string) store.NewSession {
	e := s.logEntry(ctx, user, "")
	return store.NewSession{UserID: user, TokenHash: hashToken(token), UserAgent: e.UserAgent, IPAddress: e.IPAddress,
		ExpiresAt: s.now().Add(s.cfg.SessionLifetime)}
}

// signedIn sets the session cookie on the response and returns the
// sign-in body.
func (s *Service) signedIn(ctx context.Context, user uuid.UUID, token string, pending bool) (*authv1.SignedIn, error) {
	if err := grpc.SetHeader(ctx, metadata.Pairs("set-cookie", s.cookie(token, s.cfg.SessionLifetime))); err != nil {
		return nil, err
	}
	return s.signInBody(ctx, user, pending)
}

// secureCookies is whether cookies are Secure: the public URL is https.
func (s *Service) secureCookies() bool { return strings.HasPrefix(s.cfg.Mail.PublicURL, "https://") }

// cookie is the Set-Cookie value of a session token; an empty token with
// no lifetime deletes the cookie.
func (s *Service) cookie(token string, lifetime time.Duration) string {
	c := &http.Cookie{Name: SessionCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: s.secureCookies(), MaxAge: int(lifetime / time.Second)}
	if lifetime <= 0 {
		c.MaxAge = -1
	}
	return c.String()
}

// signInBody is the sign-in body: mfaMethods are the methods the user
// may verify with, mfaRequired whether the session still has to.
func (s *Service) signInBody(ctx context.Context, user uuid.UUID, pending bool) (*authv1.SignedIn, error) {
	u, err := s.store.UserByID(ctx, user)
	if err != nil {
		return nil, err
	}
	ms, err := s.store.ActiveMemberships(ctx, user)
	if err != nil {
		return nil, err
	}
	m, err := s.store.MfaState(ctx, user, s.now())
	if err != nil {
		return nil, err
	}
	out := &authv1.SignedIn{
		User:        &authv1.SessionUser{Id: u.ID.String(), Email: u.Email, FirstName: u.FirstName, LastName: u.LastName},
		MfaRequired: pending,
		MfaMethods:  mfa.Methods(m),
		Memberships: make([]*authv1.Membership, 0, len(ms)),
	}
	for _, m := range ms {
		out.Memberships = append(out.Memberships, &authv1.Membership{TenantId: m.TenantID.String(), TenantName: m.TenantName, Role: m.Role})
	}
	if u.PlatformRole != "" {
		out.Operator = &authv1.SignedIn_PlatformRole{PlatformRole: u.PlatformRole}
	}
	return out, nil
}

// sessionPrincipal is the calling session, or 401.
func sessionPrincipal(ctx context.Context) (authctx.Principal, uuid.UUID, uuid.UUID, error) {
	p, ok := authctx.FromSession(ctx)
	if !ok {
		return p, uuid.Nil, uuid.Nil, apperr.Unauthenticated()
	}
	user, uerr := uuid.Parse(p.UserID)
	sess, serr := uuid.Parse(p.SessionID)
	if uerr != nil || serr != nil {
		return p, uuid.Nil, uuid.Nil, apperr.Unauthenticated()
	}
	return p, user, sess, nil
}

// SignOut ends the calling session and deletes its cookie.
func (a *staffServer) SignOut(ctx context.Context, _ *authv1.SignOutRequest) (*authv1.SignOutResponse, error) {
	user, sess, _, err := a.s.caller(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := a.s.store.EndSession(ctx, user, sess); err != nil && !errors.Is(err, db.ErrNotFound) {
		return nil, err
	}
	a.s.awaitCaches(ctx)
	if err := grpc.SetHeader(ctx, metadata.Pairs("set-cookie", a.s.cookie("", 0))); err != nil {
		return nil, err
	}
	return &authv1.SignOutResponse{}, nil
}

// GetSession returns the calling session's sign-in body.
func (a *staffServer) GetSession(ctx context.Context, _ *authv1.GetSessionRequest) (*authv1.GetSessionResponse, error) {
	user, _, _, err := a.s.caller(ctx, false)
	if err != nil {
		return nil, err
	}
	body, err := a.s.signInBody(ctx, user, false)
	if err != nil {
		return nil, err
	}
	return &authv1.GetSessionResponse{Session: body}, nil
}

// ListSessions lists the user's open sessions.
func (a *staffServer) ListSessions(ctx context.Context, _ *authv1.ListSessionsRequest) (*authv1.ListSessionsResponse, error) {
	user, current, _, err := a.s.caller(ctx, false)
	if err != nil {
		return nil, err
	}
	list, err := a.s.store.ListSessions(ctx, user)
	if err != nil {
		return nil, err
	}
	out := &authv1.ListSessionsResponse{Sessions: make([]*authv1.Session, 0, len(list))}
	for _, x := range list {
		out.Sessions = append(out.Sessions, &authv1.Session{Id: x.ID.String(), CreatedAt: timestamppb.New(x.CreatedAt),
			LastSeenAt: timestamppb.New(x.LastSeenAt), UserAgent: x.UserAgent, Current: x.ID == current})
	}
	return out, nil
}

// DeleteSession ends one of the user's sessions.
func (a *staffServer) DeleteSession(ctx context.Context, req *authv1.DeleteSessionRequest) (*authv1.DeleteSessionResponse, error) {
	user, _, _, err := a.s.caller(ctx, false)
	if err != nil {
		return nil, err
	}
	id, err := uuid.Parse(req.GetSessionId())
	if err != nil {
		return nil, apperr.NotFound("Session")
	}
	if err := a.s.store.EndSession(ctx, user, id); errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Session")
	} else if err != nil {
		return nil, err
	}
	a.s.awaitCaches(ctx)
	return &authv1.DeleteSessionResponse{}, nil
}
