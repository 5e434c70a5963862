package main

import (
	"bytes"
	"fmt"
	"testing"
)

func TestRequestsCounter(t *testing.T) {
	tests := []struct {
		name  string
		cycle int
		want  []int
	}{
		{"counts up", 0, []int{1, 2, 3, 4, 5}},
		{"cycles over existing resources", 3, []int{1, 2, 3, 1, 2}},
		{"a cycle of one", 1, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options{method: "POST", url: "http://127.0.0.1:1/x", body: `{"contactId":{{n}}}`, cycle: tt.cycle}
			_, next, err := requests(o)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range tt.want {
				if req := next(); !bytes.HasSuffix(req, fmt.Appendf(nil, `{"contactId":%d}`, n)) {
					t.Fatalf("request %d ends %q, want contactId %d", i+1, req[max(0, len(req)-20):], n)
				}
			}
		})
	}
}
