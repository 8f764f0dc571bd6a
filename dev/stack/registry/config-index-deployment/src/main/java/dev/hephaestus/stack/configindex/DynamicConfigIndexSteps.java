package dev.hephaestus.stack.configindex;

import apicurio.common.app.components.config.index.DynamicPropertiesInfoRecorder;
import io.apicurio.common.apps.config.Dynamic;
import io.apicurio.common.apps.config.DynamicConfigPropertyDef;
import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import io.quarkus.arc.deployment.BeanDiscoveryFinishedBuildItem;
import io.quarkus.arc.deployment.SyntheticBeanBuildItem;
import io.quarkus.arc.processor.InjectionPointInfo;
import io.quarkus.deployment.annotations.BuildProducer;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.annotations.ExecutionTime;
import io.quarkus.deployment.annotations.Record;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.jandex.AnnotationInstance;
import org.jboss.jandex.AnnotationValue;
import org.jboss.jandex.DotName;
import org.jboss.jandex.Type;

/**
 * The one build step the config-index runtime extension needs: a {@link DynamicConfigPropertyList}
 * bean listing every config property the application marks {@code @Dynamic} (settings that can be
 * changed at run time through the registry's admin API). The registry injects that bean, so
 * without it the application does not start.
 *
 * <p>A dynamic property is a field injected with {@code @ConfigProperty(name, defaultValue)} and
 * annotated {@code @Dynamic}, of type {@code Supplier<T>}: its definition records the name, T,
 * the default value and the label, description and required properties given on {@code @Dynamic}.
 */
public class DynamicConfigIndexSteps {

    private static final DotName CONFIG_PROPERTY = DotName.createSimple(ConfigProperty.class.getName());
    private static final DotName DYNAMIC = DotName.createSimple(Dynamic.class.getName());

    @BuildStep
    @Record(ExecutionTime.RUNTIME_INIT)
    void dynamicConfigPropertyList(DynamicPropertiesInfoRecorder recorder,
            BeanDiscoveryFinishedBuildItem beans, BuildProducer<SyntheticBeanBuildItem> synthetic) {
        List<DynamicConfigPropertyDef> defs = new ArrayList<>();
        for (InjectionPointInfo point : beans.getInjectionPoints()) {
            AnnotationInstance config = point.getRequiredQualifier(CONFIG_PROPERTY);
            if (config == null || !point.isField()) {
                continue;
            }
            AnnotationInstance dynamic = point.getTarget().asField().annotation(DYNAMIC);
            if (dynamic != null) {
                defs.add(definition(point, config, dynamic));
            }
        }
        synthetic.produce(SyntheticBeanBuildItem.configure(DynamicConfigPropertyList.class)
                .runtimeValue(recorder.initializePropertiesInfo(defs))
                .unremovable()
                .setRuntimeInit()
                .done());
    }

    private static DynamicConfigPropertyDef definition(InjectionPointInfo point, AnnotationInstance config,
            AnnotationInstance dynamic) {
        String name = config.value("name").asString();
        Type declared = point.getRequiredType();
        if (declared.kind() != Type.Kind.PARAMETERIZED_TYPE) {
            throw new IllegalStateException("@Dynamic config property " + name + " must be a Supplier<T>, not " + declared);
        }
        AnnotationValue defaultValue = config.value("defaultValue");
        if (defaultValue == null) {
            throw new IllegalStateException("@Dynamic config property " + name + " needs a default value");
        }
        String typeName = declared.asParameterizedType().arguments().get(0).name().toString();
        Class<?> type;
        try {
            type = Class.forName(typeName, false, Thread.currentThread().getContextClassLoader());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("@Dynamic config property " + name + ": unknown type " + typeName, e);
        }
        DynamicConfigPropertyDef def = new DynamicConfigPropertyDef(name, type, defaultValue.asString());
        AnnotationValue label = dynamic.value("label");
        AnnotationValue description = dynamic.value("description");
        AnnotationValue requires = dynamic.value("requires");
        if (label != null) {
            def.setLabel(label.asString());
        }
        if (description != null) {
            def.setDescription(description.asString());
        }
        if (requires != null) {
            def.setRequires(requires.asStringArray());
        }
        return def;
    }
}
