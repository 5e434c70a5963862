package branding

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/types/known/timestamppb"

	reportsv1 "github.com/almoner/almoner/pkg/api/almoner/reports/v1"
	"github.com/almoner/almoner/pkg/apperr"
	"github.com/almoner/almoner/pkg/authctx"
	"github.com/almoner/almoner/pkg/db"
	"github.com/almoner/almoner/pkg/scopes"
)

// Server is the BrandingService.
type Server struct {
	reportsv1.UnimplementedBrandingServiceServer
	store *Store
}

// NewServer returns the BrandingService on st.
func NewServer(st *Store) *Server { return &Server{store: st} }

// GetBranding answers the saved branding or the empty one.
func (x *Server) GetBranding(ctx context.Context, req *reportsv1.GetBrandingRequest) (*reportsv1.GetBrandingResponse, error) {
	tenant, _, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	b, err := x.store.Get(ctx, tenant)
	if err != nil {
		return nil, err
	}
	return &reportsv1.GetBrandingResponse{Branding: ToProto(b)}, nil
}

// UpdateBranding validates and saves the colors and signature.
func (x *Server) UpdateBranding(ctx context.Context, req *reportsv1.UpdateBrandingRequest) (*reportsv1.UpdateBrandingResponse, error) {
	tenant, p, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	b, err := fromProto(tenant, req.GetBranding())
	if err != nil {
		return nil, err
	}
	saved, err := x.store.Put(ctx, b, p.Actor())
	if err != nil {
		return nil, err
	}
	return &reportsv1.UpdateBrandingResponse{Branding: ToProto(saved)}, nil
}

// PutBrandingLogo checks the image, encodes it again and keeps it.
func (x *Server) PutBrandingLogo(ctx context.Context, req *reportsv1.PutBrandingLogoRequest) (*reportsv1.PutBrandingLogoResponse, error) {
	tenant, p, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	logo, err := NormalizeLogo(req.GetLogo().GetContentType(), req.GetLogo().GetData())
	if err != nil {
		return nil, err
	}
	saved, err := x.store.PutLogo(ctx, tenant, logo, p.Actor())
	if err != nil {
		return nil, err
	}
	return &reportsv1.PutBrandingLogoResponse{Branding: ToProto(saved)}, nil
}

// GetBrandingLogo answers the kept image; 404 without one.
func (x *Server) GetBrandingLogo(ctx context.Context, req *reportsv1.GetBrandingLogoRequest) (*httpbody.HttpBody, error) {
	tenant, _, err := authorize(ctx, req.GetTenantId())
	if err != nil {
		return nil, err
	}
	l, err := x.store.Logo(ctx, tenant)
	if errors.Is(err, db.ErrNotFound) {
		return nil, apperr.NotFound("Logo")
	}
	if err != nil {
		return nil, err
	}
	return &httpbody.HttpBody{ContentType: l.ContentType, Data: l.Data}, nil
}

func authorize(ctx context.Context, tenantID string) (uuid.UUID, authctx.Principal, error) {
	p, err := authctx.Require(ctx, tenantID, scopes.TenantSettingsManage)
	if err != nil {
		return uuid.Nil, p, err
	}
	id, err := uuid.Parse(p.TenantID)
	if err != nil {
		return uuid.Nil, p, apperr.NotFound("Tenant")
	}
	return id, p, nil
}

var colorPattern = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)

// maxSignature is the longest signature name or title, in characters.
const maxSignature = 200

// fromProto validates a branding body: the primary color is required,
// colors are #RRGGBB, signatures at most 200 characters.
func fromProto(tenant uuid.UUID, in *reportsv1.Branding) (Branding, error) {
	var v apperr.Violations
	if !colorPattern.MatchString(in.GetPrimaryColor()) {
		v.Add("PrimaryColor", "'PrimaryColor' must be a color written #RRGGBB, such as #1A5276.")
	}
	if in.SecondaryColor != nil && !colorPattern.MatchString(in.GetSecondaryColor()) {
		v.Add("SecondaryColor", "'SecondaryColor' must be a color written #RRGGBB, such as #D4E6F1.")
	}
	for _, f := range []struct {
		field string
		val   *string
	}{{"SignatureName", in.SignatureName}, {"SignatureTitle", in.SignatureTitle}} {
		if f.val != nil && utf8.RuneCountInString(*f.val) > maxSignature {
			v.Add(f.field, "'%s' must be %d characters or fewer.", f.field, maxSignature)
		}
	}
	if err := v.Err(); err != nil {
		return Branding{}, err
	}
	return Branding{TenantID: tenant, PrimaryColor: in.GetPrimaryColor(), SecondaryColor: in.SecondaryColor,
		SignatureName: in.SignatureName, SignatureTitle: in.SignatureTitle}, nil
}

// ToProto is the branding on the wire.
func ToProto(b Branding) *reportsv1.Branding {
	out := &reportsv1.Branding{PrimaryColor: b.PrimaryColor, SecondaryColor: b.SecondaryColor, SignatureName: b.SignatureName,
		SignatureTitle: b.SignatureTitle, HasLogo: b.LogoType != "", LogoWidth: int32(b.LogoWidth), LogoHeight: int32(b.LogoHeight)}
	if !b.UpdatedAt.IsZero() {
		out.UpdatedAt = timestamppb.New(b.UpdatedAt)
	}
	return out
}

// RGB reads a #RRGGBB color; ok is false for an empty or malformed one.
func RGB(color string) (rgb [3]int, ok bool) {
	if !colorPattern.MatchString(color) {
		return rgb, false
	}
	for i := range 3 {
		if _, err := fmt.Sscanf(color[1+2*i:3+2*i], "%02x", &rgb[i]); err != nil {
			return rgb, false
		}
	}
	return rgb, true
}
