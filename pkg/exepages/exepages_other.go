//go:build !linux

package exepages

func release() (Released, error) { return Released{}, ErrUnsupported }

func releaseFile(string) (Released, error) { return Released{}, ErrUnsupported }
