package gateway

import (
	"bytes"
	"io"
	"net/url"
	"reflect"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/protobuf/proto"

	"github.com/almoner/almoner/pkg/wirejson"
)

// codec is the runtime.Marshaler of every route: wirejson in both
// directions.
type codec struct{}

var _ runtime.Marshaler = codec{}

func (codec) ContentType(any) string { return "application/json" }

func (codec) Marshal(v any) ([]byte, error) { return wirejson.Marshal(v) }

func (codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		// A body bound to one field (`body: "contact"`) arrives as a
		// pointer to that field, a **T: allocate the message and decode
		// into it.
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Pointer {
			return io.ErrUnexpectedEOF
		}
		if rv.Elem().IsNil() {
			rv.Elem().Set(reflect.New(rv.Elem().Type().Elem()))
		}
		if m, ok = rv.Elem().Interface().(proto.Message); !ok {
			return io.ErrUnexpectedEOF
		}
	}
	return wirejson.Unmarshal(data, m)
}

func (c codec) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		if b, ok := r.(*bufferedBody); ok {
			// admitBody read the body already: decode those bytes rather
			// than a second copy, so a body in flight takes what the body
			// budget counts and no more.
			data := b.unread()
			_, _ = b.Seek(0, io.SeekEnd)
			return c.Unmarshal(data, v)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		return c.Unmarshal(data, v)
	})
}

func (c codec) NewEncoder(w io.Writer) runtime.Encoder {
	return runtime.EncoderFunc(func(v any) error {
		b, err := c.Marshal(v)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, bytes.NewReader(b))
		return err
	})
}

// queryParser fills request messages from query strings with wirejson's
// rules, so a bad `page=abc` is a 400 keyed `Page`, not a Go parse error.
type queryParser struct{}

func (queryParser) Parse(msg proto.Message, values url.Values, filter *utilities.DoubleArray) error {
	return wirejson.UnmarshalQuery(values, msg, func(name string) bool {
		return filter != nil && filter.HasCommonPrefix([]string{name})
	})
}
