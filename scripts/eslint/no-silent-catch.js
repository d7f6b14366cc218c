/**
 * A catch block must use the error it caught, rethrow, or say in a comment why dropping it is right: an empty catch,
 * or one that never reads its error and has no comment, hides failures from users and from whoever reads the log.
 * `.catch(() => …)` callbacks follow the same rule when they take no argument and their body has no comment.
 */
function usesParam(context, node, param) {
  if (!param) return false;
  const names = new Set();
  const collect = (p) => {
    if (!p) return;
    if (p.type === 'Identifier') names.add(p.name);
    else if (p.type === 'ObjectPattern') p.properties.forEach((q) => collect(q.value ?? q.argument));
    else if (p.type === 'ArrayPattern') p.elements.forEach(collect);
    else if (p.type === 'AssignmentPattern') collect(p.left);
    else if (p.type === 'RestElement') collect(p.argument);
  };
  collect(param);
  const scope = context.sourceCode.getScope(node);
  const variables = [...scope.variables, ...scope.childScopes.flatMap((s) => s.variables)];
  return variables.some((v) => names.has(v.name) && v.references.length > 0);
}

function hasComment(context, node) {
  return context.sourceCode.getCommentsInside(node).length > 0;
}

function rethrows(body) {
  return body.type === 'BlockStatement' && body.body.some((s) => s.type === 'ThrowStatement');
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'a catch must use its error, rethrow, or say in a comment why it drops it' },
    messages: { silent: 'this catch drops the error: use it (log, answer, rethrow) or say in a comment why dropping it is right' },
    schema: [],
  },
  create(context) {
    return {
      CatchClause(node) {
        if (usesParam(context, node, node.param) || rethrows(node.body) || hasComment(context, node.body)) return;
        context.report({ node, messageId: 'silent' });
      },
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.property.type !== 'Identifier' || callee.property.name !== 'catch') return;
        const handler = node.arguments[0];
        if (!handler || (handler.type !== 'ArrowFunctionExpression' && handler.type !== 'FunctionExpression')) return;
        if (usesParam(context, handler, handler.params[0]) || hasComment(context, handler.body)) return;
        // `.catch(() => undefined)` with a comment on the line before the call says why; so does a comment in the body.
        const before = context.sourceCode.getCommentsBefore(node.callee.property);
        const lineComments = context.sourceCode
          .getAllComments()
          .filter((c) => c.loc.end.line === node.loc.start.line || c.loc.start.line === node.loc.end.line);
        if (before.length > 0 || lineComments.length > 0) return;
        context.report({ node: handler, messageId: 'silent' });
      },
    };
  },
};
