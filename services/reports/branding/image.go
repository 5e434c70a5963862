// Package branding keeps a tenant's look on its documents: colors, the
// signature under letters and the logo (docs/letters.md, Branding). The
// receipts, statements and letters of the reports service print it.
package branding

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"

	"github.com/almoner/almoner/pkg/apperr"
)

// Logo limits: the gateway refuses a larger body (413) before this
// package sees it; the checks here hold for any caller.
const (
	MaxLogoBytes = 1 << 20
	MaxLogoSide  = 2000
)

// Logo is a kept logo: an image encoded by this package.
type Logo struct {
	ContentType string
	Data        []byte
	Width       int
	Height      int
}

// NormalizeLogo checks an uploaded image and encodes it again: the
// Content-Type must name its format (PNG or JPEG), it must be at most
// MaxLogoBytes and MaxLogoSide × MaxLogoSide. The size is read from the
// header before any pixel is decoded, so a small file claiming a huge
// image costs nothing. What is kept is the decoded pixels encoded by the
// standard library: metadata, trailing bytes and anything else riding in
// the file are dropped. Violations are under "Logo".
func NormalizeLogo(contentType string, data []byte) (Logo, error) {
	var format string
	switch contentType {
	case "image/png":
		format = "png"
	case "image/jpeg":
		format = "jpeg"
	default:
		return Logo{}, logoInvalid("The logo must be a PNG or JPEG image (Content-Type image/png or image/jpeg).")
	}
	if len(data) == 0 || len(data) > MaxLogoBytes {
		return Logo{}, logoInvalid(fmt.Sprintf("The logo must be between 1 byte and %d bytes; it is %d bytes.", MaxLogoBytes, len(data)))
	}
	cfg, got, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil || got != format {
		return Logo{}, logoInvalid(fmt.Sprintf("The body is not a %s image.", formatName(format)))
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxLogoSide || cfg.Height > MaxLogoSide {
		return Logo{}, logoInvalid(fmt.Sprintf("The logo must be at most %d × %d pixels; it is %d × %d.", MaxLogoSide, MaxLogoSide, cfg.Width, cfg.Height))
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Logo{}, logoInvalid(fmt.Sprintf("The body is not a %s image.", formatName(format)))
	}
	var out bytes.Buffer
	if format == "png" {
		err = png.Encode(&out, img)
	} else {
		err = jpeg.Encode(&out, img, &jpeg.Options{Quality: 90})
	}
	if err != nil {
		return Logo{}, fmt.Errorf("branding: encode logo: %w", err)
	}
	b := img.Bounds()
	return Logo{ContentType: contentType, Data: out.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
}

func formatName(format string) string {
	if format == "png" {
		return "PNG"
	}
	return "JPEG"
}

func logoInvalid(msg string) error {
	return apperr.Invalid(apperr.Violation{Field: "Logo", Message: msg})
}
