<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** No answer from the server (connection refused, TLS failure, timeout). Not retried. */
class ConnectionException extends MailboltException
{
}
