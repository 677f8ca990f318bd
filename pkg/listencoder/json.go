package listencoder

import (
	"bytes"
	"encoding/json"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// jsonSerializer is upstream's JSON serializer (the compact one: pretty and
// YAML output are left alone) with its own encoding of large lists. Its
// identifier is upstream's: the bytes are the same.
type jsonSerializer struct {
	kruntime.Serializer
}

func (s *jsonSerializer) Encode(obj kruntime.Object, w io.Writer) error {
	if l, ok := parallelJSONList(obj); ok {
		return l.encode(w)
	}
	return s.Serializer.Encode(obj, w)
}

// jsonList is a list to encode in JSON: its head up to the items, and the
// items.
type jsonList struct {
	head  []byte
	items []kruntime.Object
}

// parallelJSONList returns obj as a list to encode here: a typed list of
// the layout upstream streams (TypeMeta inlined, ListMeta as "metadata",
// then "items"), with at least minItems items. Unstructured lists and
// types with their own MarshalJSON go to upstream.
func parallelJSONList(obj kruntime.Object) (*jsonList, bool) {
	if _, ok := obj.(*unstructured.UnstructuredList); ok {
		return nil, false
	}
	if _, ok := obj.(json.Marshaler); ok {
		return nil, false
	}
	v, f, ok := largeList(obj)
	if !ok {
		return nil, false
	}
	typeMetaTag, tagged := f[0].Tag.Lookup("json")
	if !f[0].Anonymous || !tagged || (typeMetaTag != "" && typeMetaTag != ",inline") ||
		f[1].Tag.Get("json") != "metadata,omitempty" || f[2].Tag.Get("json") != "items" {
		return nil, false
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil, false
	}
	typeMeta := v.Field(0).Interface().(metav1.TypeMeta)
	head := []byte{'{'}
	for _, kv := range []struct{ key, value string }{{"kind", typeMeta.Kind}, {"apiVersion", typeMeta.APIVersion}} {
		if kv.value == "" {
			continue
		}
		if head, err = appendJSON(head, kv.key, ':'); err != nil {
			return nil, false
		}
		if head, err = appendJSON(head, kv.value, ','); err != nil {
			return nil, false
		}
	}
	if head, err = appendJSON(head, "metadata", ':'); err != nil {
		return nil, false
	}
	if head, err = appendJSON(head, v.Field(1).Interface().(metav1.ListMeta), ','); err != nil {
		return nil, false
	}
	return &jsonList{head: append(head, `"items":[`...), items: items}, true
}

// appendJSON appends value as encoding/json writes it, then suffix.
func appendJSON(b []byte, value any, suffix byte) ([]byte, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return append(append(b, data...), suffix), nil
}

// encode writes the list as upstream's streaming encoder does: the head,
// the items separated by commas, and "]}" with a newline.
func (l *jsonList) encode(w io.Writer) error {
	if _, err := w.Write(l.head); err != nil {
		return err
	}
	last := len(l.items) - 1
	if _, err := writeChunks(w, len(l.items), func(from, to int) ([]byte, error) {
		buf := bytes.NewBuffer(chunkBuffer(0))
		enc := json.NewEncoder(buf)
		for i := from; i < to; i++ {
			if err := enc.Encode(l.items[i]); err != nil {
				return nil, err
			}
			buf.Truncate(buf.Len() - 1) // Encode's newline
			if i < last {
				buf.WriteByte(',')
			}
		}
		return buf.Bytes(), nil
	}); err != nil {
		return err
	}
	_, err := w.Write([]byte("]}\n"))
	return err
}
