//go:build !linux

package exepages

func release() (Released, error) { return Released{}, ErrUnsupported }
