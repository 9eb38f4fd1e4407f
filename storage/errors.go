package storage

import "errors"

var (
	// ErrNotFound is returned when a record does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrExists is returned when a unique record already exists.
	ErrExists = errors.New("storage: already exists")
	// ErrAliasTaken is returned when another template of the account
	// holds the alias a template is given.
	ErrAliasTaken = errors.New("storage: alias taken")
	// ErrClosed is returned by writes attempted after Close.
	ErrClosed = errors.New("storage: database closed")
	// ErrNoDatabase is returned by Open with MustExist when there is no file.
	ErrNoDatabase = errors.New("storage: no database")
	// ErrLocked is returned by Open when another process holds the file.
	ErrLocked = errors.New("storage: database is in use by another process")
	// ErrDamaged is returned by Open for a file that exists but is not a
	// whole database: empty, truncated or with pages that make no sense.
	// Its message names the file; the remedy is to restore a backup.
	ErrDamaged = errors.New("storage: the database file is damaged")
	// ErrBackupOverLive is returned by Backup (and CheckOutFile) for a
	// destination that is the live database file itself (by name, or
	// through a link): the copy would be renamed over the file the server
	// is writing.
	ErrBackupOverLive = errors.New("storage: refusing to overwrite the live database")
	// ErrOverSecretKey is returned by Backup (and CheckOutFile) for a
	// destination that is the secret key file, or a key a rotation writes
	// beside it: without the key the database's secrets cannot be opened.
	ErrOverSecretKey = errors.New("storage: refusing to overwrite a secret key")
	// ErrSharedEngine is returned by what only the embedded file can do
	// (Backup) when the database is PostgreSQL.
	ErrSharedEngine = errors.New("storage: the database is PostgreSQL: back it up with pg_dump and restore it with pg_restore")
	// ErrNodesLive is returned by RotateSecretKey on a shared database
	// that nodes are using: each holds the key in memory. Its message
	// names them.
	ErrNodesLive = errors.New("storage: nodes are using the database")
)
