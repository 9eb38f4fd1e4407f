<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** The base of every exception this library throws. */
class MailboltException extends \RuntimeException
{
}
