package gateway

import (
	"bytes"
	"io"
	"net/url"
	"reflect"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/proto"

	"github.com/almoner/almoner/pkg/wirejson"
)

// codec is the runtime.Marshaler of every route: wirejson in both
// directions.
type codec struct{}

var _ runtime.Marshaler = codec{}

func (codec) ContentType(any) string { return "application/json" }

func (codec) Marshal(v any) ([]byte, error) { return wirejson.Marshal(v) }

// Unmarshal decodes a body with the strictest options: every property
// must be a field of v's message.
func (c codec) Unmarshal(data []byte, v any) error { return c.unmarshal(data, v, wirejson.Options{}) }

func (codec) unmarshal(data []byte, v any, opts wirejson.Options) error {
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
	return opts.Unmarshal(data, m)
}

func (c codec) NewDecoder(r io.Reader) runtime.Decoder {
	return runtime.DecoderFunc(func(v any) error {
		if b, ok := r.(*bufferedBody); ok {
			// admitBody read the body already: decode those bytes rather
			// than a second copy, so a body in flight takes what the body
			// budget counts and no more; routed gave it the route's
			// options.
			data := b.unread()
			_, _ = b.Seek(0, io.SeekEnd)
			if b.rawType != "" {
				return rawBody(b.rawType, data, v)
			}
			return c.unmarshal(data, v, b.opts)
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
// rules, so a bad `page=abc` is a 400 keyed `Page`, not a Go parse error,
// and a parameter the request does not read (`statuss`), or one its path
// or body sets (filter), a 400 under its name. routed has refused those
// already, before the body was read (requestRule.checkQuery); this keeps
// the parser strict on its own.
type queryParser struct{}

func (queryParser) Parse(msg proto.Message, values url.Values, filter *utilities.DoubleArray) error {
	return wirejson.UnmarshalQuery(values, msg, func(name string) bool {
		return filter != nil && filter.HasCommonPrefix([]string{name})
	})
}

// rawBody hands a file body (rawBodyRoutes) to its RPC's
// google.api.HttpBody field, a **httpbody.HttpBody.
func rawBody(contentType string, data []byte, v any) error {
	p, ok := v.(**httpbody.HttpBody)
	if !ok {
		return io.ErrUnexpectedEOF
	}
	*p = &httpbody.HttpBody{ContentType: contentType, Data: data}
	return nil
}
