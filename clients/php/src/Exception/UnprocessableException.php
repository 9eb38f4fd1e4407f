<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** Status 422 (DOMAIN_NOT_VERIFIED, a template that does not render). */
class UnprocessableException extends ApiException
{
}
