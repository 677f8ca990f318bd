package listencoder

import (
	"io"
	"reflect"
	"runtime"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

const (
	// minItems is the smallest list worth spreading over cores.
	minItems = 512
	// chunkItems are marshalled together by one worker.
	chunkItems = 256
)

// workers is how many goroutines size and marshal a list.
func workers() int { return max(1, runtime.GOMAXPROCS(0)) }

// largeList returns the struct of obj and its fields when obj is a list
// worth encoding here: a pointer to a struct of TypeMeta, ListMeta and a
// slice of at least minItems items. The caller checks the fields' tags.
func largeList(obj kruntime.Object) (reflect.Value, [3]reflect.StructField, bool) {
	var fields [3]reflect.StructField
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return v, fields, false
	}
	v = v.Elem()
	t := v.Type()
	if t.NumField() != 3 {
		return v, fields, false
	}
	for i := range fields {
		fields[i] = t.Field(i)
	}
	ok := fields[0].Type == reflect.TypeFor[metav1.TypeMeta]() && fields[1].Type == reflect.TypeFor[metav1.ListMeta]() &&
		fields[2].Type.Kind() == reflect.Slice && v.Field(2).Len() >= minItems
	return v, fields, ok
}

var chunkBuffers sync.Pool

// chunkBuffer returns an empty buffer of at least size bytes' capacity,
// from those writeChunks wrote.
func chunkBuffer(size int) []byte {
	if b, ok := chunkBuffers.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// chunk is a run of items marshalled by one worker.
type chunk struct {
	from, to int
	buf      []byte
	err      error
	done     chan struct{}
}

// writeChunks marshals n items in chunks of chunkItems with marshal, at
// most workers() chunks at a time, and writes each chunk to w as soon as it
// and those before it are done. A failed write or marshal stops the
// dispatch of further chunks.
func writeChunks(w io.Writer, n int, marshal func(from, to int) ([]byte, error)) (int, error) {
	var chunks []*chunk
	for from := 0; from < n; from += chunkItems {
		chunks = append(chunks, &chunk{from: from, to: min(from+chunkItems, n), done: make(chan struct{})})
	}
	slots := make(chan struct{}, workers())
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for _, c := range chunks {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			go func() {
				defer close(c.done)
				c.buf, c.err = marshal(c.from, c.to)
			}()
		}
	}()
	written := 0
	for _, c := range chunks {
		<-c.done
		if c.err != nil {
			return written, c.err
		}
		m, err := w.Write(c.buf)
		written += m
		buf := c.buf
		chunkBuffers.Put(&buf)
		c.buf = nil
		<-slots
		if err != nil {
			return written, err
		}
	}
	return written, nil
}
