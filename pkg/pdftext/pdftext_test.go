package pdftext

import "testing"

func TestWithoutMarks(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                      "plain",
		"\u202Bשלום\u202C":           "שלום",
		"a\u200Eb\u200Fc":            "abc",
		"\u2067Donors\u2069 \u2066x": "Donors x",
	} {
		if got := WithoutMarks(in); got != want {
			t.Errorf("WithoutMarks(%q) = %q, want %q", in, got, want)
		}
	}
}
