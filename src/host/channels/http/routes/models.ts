import { canSee } from '../auth.js';
import { PincerError } from '../../../../shared/errors.js';
import type { HttpRouteModule } from '../types.js';

/**
 * The model catalogue as the host published it, per agent group: `GET /v1/models` (every group the caller may see)
 * and `GET /v1/groups/<group>/models` (one group, by name or id). An admin sees every group; a token limited to some
 * conversations sees the groups of those conversations' sessions. Nothing here searches for models or reads keys: it
 * is the published generation (docs/models.md).
 */
export const modelRoutes: HttpRouteModule = ({ api }, { host }) => {
  const visibleGroups = async (principal: Parameters<typeof canSee>[0]): Promise<Set<string> | 'all'> => {
    if (principal.kind === 'admin') return 'all';
    const sessions = await host.listSessions();
    return new Set(sessions.filter((s) => canSee(principal, s.channelType, s.platformId)).map((s) => s.agentGroup));
  };

  api.get('/v1/models', async (c) => {
    const visible = await visibleGroups(c.get('principal'));
    return c.json({ groups: host.modelCatalogue().filter((view) => visible === 'all' || visible.has(view.group)) });
  });

  api.get('/v1/groups/:group/models', async (c) => {
    const wanted = c.req.param('group');
    const visible = await visibleGroups(c.get('principal'));
    const view = host.modelCatalogue().find((v) => (v.group === wanted || v.groupId === wanted) && (visible === 'all' || visible.has(v.group)));
    if (!view)
      throw new PincerError('not-found', `no agent group "${wanted}"${visible === 'all' ? '' : " among the groups of this token's conversations"}`, {
        field: 'group',
      });
    return c.json(view);
  });
};
