// Package listencoder encodes large lists, in protobuf and in JSON, with
// their items marshalled on several cores.
//
// Upstream's serializers marshal the items of a list one after the other on
// the request's goroutine (protobuf sizes them all first): for a wildcard
// LIST of 10,000 configmaps that is most of the server's part of the
// request. Here protobuf items are sized in parallel, and the items of
// either format are marshalled in chunks by workers while the request's
// goroutine writes the chunks already done, in order. The bytes are the
// same as upstream's; smaller lists and everything else go to upstream's
// serializers.
package listencoder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// protoPrefix starts every Kubernetes protobuf message ("k8s" and a zero).
var protoPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// WithParallelLists returns ns whose protobuf and compact JSON serializers
// encode lists of at least minItems items in parallel.
func WithParallelLists(ns kruntime.NegotiatedSerializer) kruntime.NegotiatedSerializer {
	infos := append([]kruntime.SerializerInfo(nil), ns.SupportedMediaTypes()...)
	for i := range infos {
		if infos[i].Serializer == nil {
			continue
		}
		switch infos[i].MediaType {
		case kruntime.ContentTypeProtobuf:
			infos[i].Serializer = &listSerializer{Serializer: infos[i].Serializer}
		case kruntime.ContentTypeJSON:
			infos[i].Serializer = &jsonSerializer{Serializer: infos[i].Serializer}
		}
	}
	return negotiated{NegotiatedSerializer: ns, infos: infos}
}

type negotiated struct {
	kruntime.NegotiatedSerializer
	infos []kruntime.SerializerInfo
}

func (n negotiated) SupportedMediaTypes() []kruntime.SerializerInfo { return n.infos }

// listSerializer is upstream's protobuf serializer with its own encoding of
// large lists. Its identifier is upstream's: the bytes are the same.
type listSerializer struct {
	kruntime.Serializer
}

func (s *listSerializer) Encode(obj kruntime.Object, w io.Writer) error {
	return s.EncodeWithAllocator(obj, w, &kruntime.SimpleAllocator{})
}

func (s *listSerializer) EncodeWithAllocator(obj kruntime.Object, w io.Writer, alloc kruntime.MemoryAllocator) error {
	if l, ok := parallelList(obj); ok {
		return l.encode(w)
	}
	if e, ok := s.Serializer.(kruntime.EncoderWithAllocator); ok {
		return e.EncodeWithAllocator(obj, w, alloc)
	}
	return s.Serializer.Encode(obj, w)
}

// marshaler is what gogo-protobuf generates for every API type.
type marshaler interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// list is a list to encode: its kind, metadata and items.
type list struct {
	unknown  kruntime.Unknown
	listMeta metav1.ListMeta
	items    []marshaler
}

// parallelList returns obj as a list to encode here: a list type of the
// layout upstream streams (TypeMeta, ListMeta as field 1, items as field
// 2), with at least minItems items that all marshal themselves.
func parallelList(obj kruntime.Object) (*list, bool) {
	if _, ok := obj.(*kruntime.Unknown); ok {
		return nil, false
	}
	v, f, ok := largeList(obj)
	if !ok || f[0].Tag.Get("protobuf") != "" || f[1].Tag.Get("protobuf") != "bytes,1,opt,name=metadata" ||
		f[2].Tag.Get("protobuf") != "bytes,2,rep,name=items" {
		return nil, false
	}
	objs, err := meta.ExtractList(obj)
	if err != nil {
		return nil, false
	}
	items := make([]marshaler, len(objs))
	for i, o := range objs {
		m, ok := o.(marshaler)
		if !ok {
			return nil, false
		}
		items[i] = m
	}
	kind := obj.GetObjectKind().GroupVersionKind()
	return &list{
		unknown:  kruntime.Unknown{TypeMeta: kruntime.TypeMeta{Kind: kind.Kind, APIVersion: kind.GroupVersion().String()}},
		listMeta: v.Field(1).Interface().(metav1.ListMeta),
		items:    items,
	}, true
}

// encode writes the list as upstream does: the prefix, then an Unknown
// whose raw bytes are the list message.
func (l *list) encode(w io.Writer) error {
	sizes := l.sizes()
	metaSize := l.listMeta.Size()
	total := fieldSize(metaSize)
	for _, n := range sizes {
		total += fieldSize(n)
	}
	if _, err := w.Write(protoPrefix); err != nil {
		return err
	}
	_, err := l.unknown.MarshalToWriter(w, total, func(w io.Writer) (int, error) {
		buf := make([]byte, fieldSize(metaSize))
		if err := marshalField(buf, &l.listMeta, 0xa, metaSize); err != nil {
			return 0, err
		}
		n, err := w.Write(buf)
		if err != nil {
			return n, err
		}
		m, err := writeChunks(w, len(l.items), func(from, to int) ([]byte, error) {
			return l.marshalChunk(from, to, sizes)
		})
		return n + m, err
	})
	return err
}

// sizes returns the size of each item, computed by workers() goroutines
// on contiguous ranges.
func (l *list) sizes() []int {
	sizes := make([]int, len(l.items))
	n := workers()
	per := (len(l.items) + n - 1) / n
	var wg sync.WaitGroup
	for from := 0; from < len(l.items); from += per {
		to := min(from+per, len(l.items))
		wg.Go(func() {
			for i := from; i < to; i++ {
				sizes[i] = l.items[i].Size()
			}
		})
	}
	wg.Wait()
	return sizes
}

// marshalChunk marshals items [from, to) with their field headers into a
// buffer of chunkBuffer.
func (l *list) marshalChunk(from, to int, sizes []int) ([]byte, error) {
	size := 0
	for i := from; i < to; i++ {
		size += fieldSize(sizes[i])
	}
	buf := chunkBuffer(size)[:size]
	off := 0
	for i := from; i < to; i++ {
		n := fieldSize(sizes[i])
		if err := marshalField(buf[off:off+n], l.items[i], 0x12, sizes[i]); err != nil {
			return nil, err
		}
		off += n
	}
	return buf, nil
}

// fieldSize is the size of a length-delimited field of n bytes: its
// one-byte tag, its length and the bytes.
func fieldSize(n int) int { return 1 + protowire.SizeBytes(n) }

var errSizeChanged = errors.New("object size changed while it was encoded")

// marshalField writes field tag, size and m into buf, which is exactly
// fieldSize(size) long.
func marshalField(buf []byte, m marshaler, tag byte, size int) error {
	buf[0] = tag
	k := 1 + binary.PutUvarint(buf[1:], uint64(size))
	n, err := m.MarshalToSizedBuffer(buf[k:])
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%w: %d bytes, %d written", errSizeChanged, size, n)
	}
	return nil
}
