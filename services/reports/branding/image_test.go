package branding

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/almoner/almoner/pkg/apperr"
)

func encoded(t testing.TB, format string, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	var err error
	switch format {
	case "png":
		err = png.Encode(&b, img)
	case "jpeg":
		err = jpeg.Encode(&b, img, nil)
	case "gif":
		err = gif.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestNormalizeLogo(t *testing.T) {
	pngData := encoded(t, "png", 40, 20)
	jpegData := encoded(t, "jpeg", 40, 20)
	tall := encoded(t, "png", 1, MaxLogoSide+1)
	// A PNG with bytes after its end: kept files carry only pixels.
	trailing := append(append([]byte{}, pngData...), []byte("<script>alert(1)</script>")...)
	for _, tc := range []struct {
		name, contentType string
		data              []byte
		ok                bool
	}{
		{"png", "image/png", pngData, true},
		{"jpeg", "image/jpeg", jpegData, true},
		{"png with trailing bytes", "image/png", trailing, true},
		{"jpeg said to be png", "image/png", jpegData, false},
		{"gif", "image/gif", encoded(t, "gif", 4, 4), false},
		{"gif said to be png", "image/png", encoded(t, "gif", 4, 4), false},
		{"too tall", "image/png", tall, false},
		{"too large", "image/png", make([]byte, MaxLogoBytes+1), false},
		{"empty", "image/png", nil, false},
		{"truncated", "image/png", pngData[:len(pngData)/2], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logo, err := NormalizeLogo(tc.contentType, tc.data)
			if !tc.ok {
				var ae *apperr.Error
				if !errors.As(err, &ae) || ae.Kind != apperr.KindInvalid || ae.Violations[0].Field != "Logo" {
					t.Fatalf("err = %v, want a violation of Logo", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if logo.Width != 40 || logo.Height != 20 || logo.ContentType != tc.contentType {
				t.Fatalf("logo = %s %dx%d", logo.ContentType, logo.Width, logo.Height)
			}
			if bytes.Contains(logo.Data, []byte("script")) {
				t.Fatal("trailing bytes were kept")
			}
			if _, format, err := image.Decode(bytes.NewReader(logo.Data)); err != nil || "image/"+format != tc.contentType {
				t.Fatalf("kept logo decodes as %q: %v", format, err)
			}
		})
	}
}

// FuzzNormalizeLogo feeds arbitrary bytes to the image parse path: it
// must answer a logo within the limits or a violation, never panic or
// return anything else.
func FuzzNormalizeLogo(f *testing.F) {
	f.Add(encoded(f, "png", 3, 2), true)
	f.Add(encoded(f, "jpeg", 3, 2), false)
	f.Add([]byte("\x89PNG\r\n\x1a\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, isPNG bool) {
		ct := "image/jpeg"
		if isPNG {
			ct = "image/png"
		}
		logo, err := NormalizeLogo(ct, data)
		if err != nil {
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Kind != apperr.KindInvalid {
				t.Fatalf("err = %v, want a violation", err)
			}
			return
		}
		if logo.Width > MaxLogoSide || logo.Height > MaxLogoSide || len(logo.Data) == 0 {
			t.Fatalf("logo %dx%d, %d bytes", logo.Width, logo.Height, len(logo.Data))
		}
	})
}
