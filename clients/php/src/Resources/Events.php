<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

/** GET /v1/events: list(), pages(), all() with type, message_id, recipient, since, until. */
final class Events extends Resource
{
    use Listable;

    public const PATH = '/v1/events';
}
