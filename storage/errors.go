package storage

import "errors"

var (
	// ErrNotFound is returned when a record does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrExists is returned when a unique record already exists.
	ErrExists = errors.New("storage: already exists")
	// ErrClosed is returned by writes attempted after Close.
	ErrClosed = errors.New("storage: database closed")
	// ErrNoDatabase is returned by Open with MustExist when there is no file.
	ErrNoDatabase = errors.New("storage: no database")
	// ErrLocked is returned by Open when another process holds the file.
	ErrLocked = errors.New("storage: database is in use by another process")
)
