package contacts

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	contactsv1 "github.com/almoner/almoner/pkg/api/almoner/contacts/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/normalize"
	"github.com/almoner/almoner/pkg/ratelimit"
	"github.com/almoner/almoner/services/contacts/store"
)

// Limits of a contact-form post.
const (
	maxFormNameLength    = 100
	maxFormMessageLength = 5000
)

// formThanks is the acknowledgement a sender sees.
const formThanks = "Thank you for your message. We will be in touch soon."

type formServer struct {
	contactsv1.UnimplementedContactFormServiceServer
	s *Service
}

// CreateContactFormSubmission counts the post against its source address
// first, so that floods of invalid posts are limited too, then validates
// and stores it.
func (f *formServer) CreateContactFormSubmission(ctx context.Context, req *contactsv1.CreateContactFormSubmissionRequest) (*contactsv1.CreateContactFormSubmissionResponse, error) {
	ip, ok := ratelimit.FromIncoming(ctx)
	if !ok {
		// Only a caller that is neither the gateway nor on a network
		// connection gets here; it has no address to be counted under.
		return nil, apperr.Forbidden("The client address is unknown.")
	}
	allowed, err := f.s.limiter.Allow(ctx, ratelimit.ContactForm, ratelimit.Key(ip))
	if err != nil {
		return nil, err
	}
	if !allowed {
		return nil, apperr.RateLimited()
	}
	sub, err := validateForm(req)
	if err != nil {
		return nil, err
	}
	sub.ClientIP = ip.String()
	saved, err := f.s.store.CreateFormSubmission(ctx, sub)
	if err != nil {
		return nil, err
	}
	return &contactsv1.CreateContactFormSubmissionResponse{Id: saved.ID.String(), Message: formThanks}, nil
}

func validateForm(req *contactsv1.CreateContactFormSubmissionRequest) (store.FormSubmission, error) {
	var v apperr.Violations
	sub := store.FormSubmission{
		Name:         text(&v, "Name", "Name", req.GetName(), maxFormNameLength, false),
		Organization: text(&v, "Organization", "Organization", req.GetOrganization(), maxOrganizationLength, false),
		Message:      text(&v, "Message", "Message", req.GetMessage(), maxFormMessageLength, true),
	}
	if sub.Name == "" && !v.Has("Name") {
		v.Add("Name", "'Name' must not be empty.")
	}
	if sub.Message == "" && !v.Has("Message") {
		v.Add("Message", "'Message' must not be empty.")
	}
	switch addr, _, ok := normalize.Email(req.GetEmail()); {
	case strings.TrimSpace(req.GetEmail()) == "":
		v.Add("Email", "'Email' must not be empty.")
	case !ok:
		v.Add("Email", "'Email' is not a valid email address.")
	default:
		sub.Email = addr
	}
	if p := strings.TrimSpace(req.GetPhone()); p != "" {
		number, _, ok := normalize.Phone(p)
		if !ok {
			v.Add("Phone", "'Phone' is not a valid phone number (7 to 15 digits, optionally with an extension).")
		}
		sub.Phone = number
	}
	if err := v.Err(); err != nil {
		return store.FormSubmission{}, err
	}
	return sub, nil
}

// formAdminServer lets operators read the posts. The gateway maps none of
// its RPCs; it is reachable on the internal gRPC port only, like the auth
// service's tenant administration.
type formAdminServer struct {
	contactsv1.UnimplementedContactFormAdminServiceServer
	s *Service
}

// ListContactFormSubmissions returns posts, newest first.
func (a *formAdminServer) ListContactFormSubmissions(ctx context.Context, req *contactsv1.ListContactFormSubmissionsRequest) (*contactsv1.ListContactFormSubmissionsResponse, error) {
	size := int(req.GetPageSize())
	switch {
	case size == 0:
		size = 50
	case size < 0 || size > 500:
		return nil, apperr.Invalid(apperr.Violation{Field: "PageSize", Message: "'PageSize' must be between 1 and 500."})
	}
	var before uuid.UUID
	if req.GetBefore() != "" {
		var err error
		if before, err = uuid.Parse(req.GetBefore()); err != nil {
			return nil, apperr.Invalid(apperr.Violation{Field: "Before", Message: "'Before' must be a submission id."})
		}
	}
	subs, err := a.s.store.ListFormSubmissions(ctx, before, size)
	if err != nil {
		return nil, err
	}
	out := &contactsv1.ListContactFormSubmissionsResponse{Submissions: make([]*contactsv1.ContactFormSubmission, len(subs))}
	for i, sub := range subs {
		out.Submissions[i] = &contactsv1.ContactFormSubmission{
			Id: sub.ID.String(), Name: sub.Name, Email: sub.Email, Message: sub.Message,
			Organization: optional(sub.Organization), Phone: optional(sub.Phone),
			ClientIp: sub.ClientIP, CreatedAt: timestamppb.New(sub.CreatedAt),
		}
	}
	return out, nil
}
