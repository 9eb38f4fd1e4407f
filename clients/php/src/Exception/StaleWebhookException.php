<?php
declare(strict_types=1);

namespace Mailbolt\Exception;

/** The signature's timestamp is further from the clock than the tolerance (replayed or very late). */
class StaleWebhookException extends WebhookException
{
    public function getHttpStatus(): int
    {
        return 400;
    }
}
