<?php
declare(strict_types=1);

namespace Mailbolt\Resources;

use Mailbolt\Response;

final class Team extends Resource
{
    use Listable;

    public const PATH = '/v1/team';

    /**
     * POST /v1/team/invite
     *
     * @param array<string, mixed> $invitation email, role
     * @param array{idempotency_key?: string} $options
     */
    public function invite(array $invitation, array $options = []): Response
    {
        return $this->call('POST', self::PATH . '/invite', [], $invitation, $options);
    }
}
